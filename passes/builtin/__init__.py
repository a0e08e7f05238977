"""Built-in operator-layer passes. Each registers through the `gir.passes` entry-point group in pyproject.toml,
exactly as a plugin would; `exprs` holds the expression helpers they share (usable by plugins too)."""
