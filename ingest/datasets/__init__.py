"""Generic dataset import: declared benchmark sets (:mod:`.catalogue`), their format readers
(:mod:`.readers`) and the preparation every set goes through (:mod:`.declaration`).

Pure package: standard library and comparna.rna only (no Django).
"""
