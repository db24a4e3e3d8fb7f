"""RNA STRAND v2.0 static benchmark: reader (:mod:`.reader`) and preparation pipeline (:mod:`.prepare`).

Pure package: standard library and comparna.rna only (no Django).
"""
