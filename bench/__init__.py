"""CompaRNA benchmarks: each compares the system with its naive baseline and its limit (see README.md)."""
