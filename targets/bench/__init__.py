"""`gir bench`: suites of memory-bound operators, per-target measurement, reports and plots."""
