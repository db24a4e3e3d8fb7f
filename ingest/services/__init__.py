"""Ingest services, one module per source: ``strand`` (RNA STRAND), ``pdb`` (weekly PDB polls), ``rfam``
(family assignment and comparative inputs), and ``runs`` (the progress record every import keeps).

A new source gets its own module here that stores its targets and then calls
:func:`comparna.pipeline.targets_created`; the pipeline does the rest.
"""
