"""RNA STRAND v2.0: the reader of its BPSEQ export and header provenance (:mod:`.reader`). Its filters,
redundancy removal and subsets are the generic ones of its declaration (``ingest.datasets.catalogue``).

Pure package: standard library and comparna.rna only (no Django).
"""
