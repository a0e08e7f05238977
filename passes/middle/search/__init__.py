"""The search over memory-access patterns: decision records, recipes, cost models, the `schedule` pass."""
