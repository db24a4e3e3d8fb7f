"""CLI around ``gpu_contrafold`` (CPU engine): the CONTRAfold 2.02 model, Viterbi, MEA and probabilities.

Do, Woods & Batzoglou 2006, Bioinformatics 22:e90 (CONTRAfold). ``gpu-contrafold`` re-implements
CONTRAfold's conditional log-linear model with its bundled 2.0 parameters and reproduces the CONTRAfold
binary's Viterbi (``--viterbi``) and MEA (``predict --gamma``) structures and posteriors (its validation
against CONTRAfold 2.02); here its CPU engine (Numba) runs, never the GPU one.

Modes: ``viterbi`` (maximum-probability structure) and ``mea`` (maximum expected accuracy structure with
``--gamma``, CONTRAfold's default decoding; pair probabilities above ``--cutoff`` are printed).

Numba compiles the engine on first use (tens of seconds) and caches the machine code. The install step
fills a cache in ``<venvs>/_data/numba-cache`` (:func:`warm_up`); numba only uses a cache directory it can
write, so inside the read-only sandbox the cache is copied to a private temporary directory first.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from comparna.rna.formats import parse_dot_bracket
from predictors.core.venvs import venvs_dir
from predictors.programs._common import (
    DEFAULT_CUTOFF,
    base_parser,
    package_version,
    print_pairs_json,
    read_query,
)

NUMBA_CACHE = venvs_dir() / "_data" / "numba-cache"
MODES = ("viterbi", "mea")


def _use_numba_cache(source: Path = NUMBA_CACHE) -> None:
    """Point Numba at the prebuilt cache (a writable copy of it when it is read-only) before Numba loads."""
    if "NUMBA_CACHE_DIR" in os.environ or not source.is_dir():
        return
    if os.access(source, os.W_OK):
        os.environ["NUMBA_CACHE_DIR"] = str(source)
        return
    copy = Path(tempfile.mkdtemp(prefix="comparna-numba-"))
    shutil.copytree(source, copy, dirs_exist_ok=True)
    os.environ["NUMBA_CACHE_DIR"] = str(copy)


_use_numba_cache()
import gpu_contrafold  # noqa: E402 - Numba reads NUMBA_CACHE_DIR when it is first imported

_params: dict | None = None


def parameters() -> dict:
    """The bundled CONTRAfold 2.0 parameters, loaded once per process."""
    global _params
    if _params is None:
        _params = gpu_contrafold.load()
    return _params


def predict(sequence: str, *, mode: str = "mea", gamma: float = 6.0, cutoff: float = DEFAULT_CUTOFF) -> dict:
    """``{"structure": dot-bracket, "pairs": [(i, j)], "probabilities": [(i, j, p)] or None}`` (1-based)."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}")
    params = parameters()
    if mode == "viterbi":
        structure = gpu_contrafold.mfe(sequence, params)
        return {"structure": structure, "pairs": parse_dot_bracket(structure).pairs, "probabilities": None}
    structure = gpu_contrafold.mea(sequence, params, gamma=gamma)
    matrix = gpu_contrafold.bpp(sequence, params)  # upper triangle, 0-based
    n = len(sequence)
    probabilities = [
        (i + 1, j + 1, float(matrix[i, j]))
        for i in range(n)
        for j in range(i + 1, n)
        if matrix[i, j] >= cutoff
    ]
    return {
        "structure": structure,
        "pairs": parse_dot_bracket(structure).pairs,
        "probabilities": probabilities,
    }


def warm_up() -> None:
    """Compile (or load from the cache) every engine function a prediction or the tests use."""
    from gpu_contrafold import cpu

    for mode in MODES:
        predict("GGGGAAAACCCCAUGCAUGCAUGC", mode=mode)
    cpu.logZ("GGGGAAAACCCC", parameters())


def main(argv: list[str] | None = None) -> None:
    parser = base_parser(__doc__.splitlines()[0], "gpu-contrafold")
    parser.add_argument("--mode", choices=MODES, default="mea")
    parser.add_argument("--gamma", type=float, default=6.0, help="MEA gamma (CONTRAfold's default 6)")
    parser.add_argument("--cutoff", type=float, default=DEFAULT_CUTOFF, help="probability cut-off")
    args = parser.parse_args(argv)
    _name, seq = read_query(args.fasta)
    result = predict(seq, mode=args.mode, gamma=args.gamma, cutoff=args.cutoff)
    print_pairs_json(
        program=f"gpu-contrafold CPU {args.mode}" + (f" gamma={args.gamma:g}" if args.mode == "mea" else ""),
        version=package_version("gpu-contrafold"),
        sequence=seq,
        pairs=result["pairs"],
        probabilities=result["probabilities"],
        extra={"structure": result["structure"]},
    )


if __name__ == "__main__":
    main()
