"""Small command-line wrappers of ours around predictors that ship only as Python modules.

Each wrapper reads one FASTA file, folds its first sequence and prints one format that
:mod:`predictors.core.parsers` reads; ``--version`` prints the wrapped package's version. They run inside
the sandbox as ``{python} -m predictors.programs.<wrapper> ...``.
"""
