"""Pure core of CompaRNA: structures, formats, metrics, statistics and rankings.

Nothing in this package imports Django or Celery (enforced by an import-linter contract).
"""
