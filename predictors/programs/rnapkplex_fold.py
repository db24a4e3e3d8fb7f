"""CLI around Debian's ``RNAPKplex`` (vienna-rna, non-free): MFE folding with one pseudoknot interaction.

RNAPKplex (ViennaRNA Package; Lorenz et al. 2011, Algorithms Mol Biol 6:26) makes two intervals
accessible with RNAplfold's algorithm (Bernhart, Hofacker & Stadler 2006, Bioinformatics 22:614) and adds
their interaction energy as in RNAplex (Tafer & Hofacker 2008, Bioinformatics 24:2657); a pseudoknot is
kept only when it gains more than the initiation cost (``-e``, default -8.10 kcal/mol). The program reads
the sequence from standard input and writes a PostScript plot into its working directory, so it runs
here in a private temporary directory. Pseudoknotted pairs are printed as ``[]``.

Debian's build (2.5.1+dfsg-1) aborts at exit ("free(): invalid pointer", SIGABRT) whenever
``OMP_NUM_THREADS`` is set, to any value, after printing its answer; the sandbox sets it to 1 for every
program. So it runs without that variable and with ``OMP_THREAD_LIMIT=1``, which keeps it on one thread.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

from predictors.programs._common import print_dot_bracket, read_query

PROGRAM = "RNAPKplex"


def version() -> str:
    out = subprocess.run([PROGRAM, "--version"], capture_output=True, text=True, check=True).stdout
    return out.split()[-1]


def predict(sequence: str) -> dict:
    """``{"structure": dot-bracket with [] for the pseudoknot, "energy": kcal/mol}`` of one sequence."""
    with tempfile.TemporaryDirectory(prefix="rnapkplex-") as work:
        env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
        env["OMP_THREAD_LIMIT"] = "1"
        out = subprocess.run(
            [PROGRAM], input=f">query\n{sequence}\n", capture_output=True, text=True, cwd=work, check=True,
            env=env,
        ).stdout
    last = out.strip().splitlines()[-1]
    structure, _, energy = last.partition(" ")
    if len(structure) != len(sequence):
        raise ValueError(f"{PROGRAM} printed no structure of length {len(sequence)}: {last!r}")
    return {"structure": structure, "energy": float(energy.strip(" ()"))}


def main(argv: list[str] | None = None) -> None:
    import argparse

    if shutil.which(PROGRAM) is None:
        raise SystemExit(f"{PROGRAM} is not installed (Debian package vienna-rna, non-free)")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("fasta", help="FASTA file; the first sequence is folded")
    parser.add_argument("--version", action="version", version=f"%(prog)s {PROGRAM} {version()}")
    args = parser.parse_args(argv)
    name, seq = read_query(args.fasta)
    result = predict(seq)
    print_dot_bracket(name, seq, result["structure"], result["energy"])


if __name__ == "__main__":
    main()
