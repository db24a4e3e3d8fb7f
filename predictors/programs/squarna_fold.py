"""CLI around SQUARNA: base-pair maximisation over stems, with pseudoknots (single-sequence mode).

Serdakov, Bohdan, Nikolaev, Bujnicki & Baulin, bioRxiv 2026, doi:10.64898/2026.06.30.735492 (the
citation given by the installed package; https://github.com/febos/SQUARNA). SQUARNA prints a ranked
list of structures; the top-ranked one (``#1``) is the prediction. It runs with one thread
(``threads=1``): workers run jobs side by side.
"""

from __future__ import annotations

import contextlib
import io
import sys

from SQUARNA import Predict

from predictors.programs._common import base_parser, print_dot_bracket, read_query


def top_structure(output: str, length: int) -> str:
    """The structure ranked ``#1`` in SQUARNA's single-sequence output."""
    for line in output.splitlines():
        fields = line.split("\t")
        if len(fields) > 1 and fields[1] == "#1" and len(fields[0]) == length:
            return fields[0]
    raise ValueError("no structure ranked #1 in SQUARNA's output")


def predict(sequence: str, *, config: str | None = None) -> dict:
    """``{"structure": dot-bracket}``: SQUARNA's top-ranked structure (``ValueError`` if it printed none;
    the message carries the end of SQUARNA's output)."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        Predict(inputseq=sequence, threads=1, configfile=config, ignorewarn=True)
    try:
        return {"structure": top_structure(buf.getvalue(), len(sequence))}
    except ValueError as exc:
        raise ValueError(f"{exc}\n{buf.getvalue()[-2000:]}") from None


def main(argv: list[str] | None = None) -> None:
    parser = base_parser(__doc__.splitlines()[0], "SQUARNA")
    parser.add_argument("--config", default=None, help="SQUARNA config name (default: by length)")
    args = parser.parse_args(argv)
    name, seq = read_query(args.fasta)
    try:
        result = predict(seq, config=args.config)
    except ValueError as exc:
        sys.exit(str(exc))
    print_dot_bracket(name, seq, result["structure"])


if __name__ == "__main__":
    main()
