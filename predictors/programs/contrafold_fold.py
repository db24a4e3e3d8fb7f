"""CLI around ``gpu_contrafold`` (CPU engine): the CONTRAfold 2.02 model, Viterbi, MEA and probabilities.

Do, Woods & Batzoglou 2006, Bioinformatics 22:e90 (CONTRAfold). ``gpu-contrafold`` re-implements
CONTRAfold's conditional log-linear model with its bundled 2.0 parameters and reproduces the CONTRAfold
binary's Viterbi (``--viterbi``) and MEA (``predict --gamma``) structures and posteriors (its validation
against CONTRAfold 2.02); here its CPU engine (Numba) runs, never the GPU one.

Modes: ``viterbi`` (maximum-probability structure), ``mea`` (maximum expected accuracy structure with
``--gamma``, CONTRAfold's default decoding) and ``threshknot`` (ThreshKnot on the posteriors, ``--theta``;
may give pseudoknots); the last two print pair probabilities above ``--cutoff``.

Numba compiles the engine on first use (tens of seconds) and caches the machine code. The install step
fills a cache in ``<venvs>/_data/numba-cache`` (:func:`warm_up`), which specs pass as ``--numba-cache
{venvs}/_data/numba-cache``; Numba only uses a cache directory it can write, so inside the read-only
sandbox the cache is copied to a private temporary directory before Numba is imported.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

from comparna.rna.formats import parse_dot_bracket
from predictors.programs._common import (
    DEFAULT_CUTOFF,
    base_parser,
    package_version,
    print_pairs_json,
    read_query,
)
from predictors.programs.threshknot import DEFAULT_THETA, threshknot

MODES = ("viterbi", "mea", "threshknot")


_cache_source: Path | None = None


def use_numba_cache(source: Path) -> None:
    """Point Numba at the prebuilt cache (a writable copy of it when it is read-only); call before Numba
    is imported, i.e. before :mod:`gpu_contrafold`. Calling it again with the same cache (``main`` once per
    target of a batch, in one process) changes nothing."""
    global _cache_source
    if _cache_source == source:
        return
    if "numba" in sys.modules:
        raise RuntimeError("Numba is already loaded; its cache directory can no longer be chosen")
    _cache_source = source
    if "NUMBA_CACHE_DIR" in os.environ or not source.is_dir():
        return
    if os.access(source, os.W_OK):
        os.environ["NUMBA_CACHE_DIR"] = str(source)
        return
    copy = Path(tempfile.mkdtemp(prefix="comparna-numba-"))
    shutil.copytree(source, copy, dirs_exist_ok=True)
    os.environ["NUMBA_CACHE_DIR"] = str(copy)


_params: dict | None = None


def _engine():
    # Imported on first use, so that a caller can choose Numba's cache directory first.
    import gpu_contrafold

    return gpu_contrafold


def parameters() -> dict:
    """The bundled CONTRAfold 2.0 parameters, loaded once per process."""
    global _params
    if _params is None:
        _params = _engine().load()
    return _params


def predict(
    sequence: str,
    *,
    mode: str = "mea",
    gamma: float = 6.0,
    theta: float = DEFAULT_THETA,
    cutoff: float = DEFAULT_CUTOFF,
) -> dict:
    """``{"structure": dot-bracket, "pairs": [(i, j)], "probabilities": [(i, j, p)] or None}`` (1-based)."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}")
    params, engine = parameters(), _engine()
    if mode == "viterbi":
        structure = engine.mfe(sequence, params)
        return {"structure": structure, "pairs": parse_dot_bracket(structure).pairs, "probabilities": None}
    matrix = engine.bpp(sequence, params)  # upper triangle, 0-based
    n = len(sequence)
    probabilities = [
        (i + 1, j + 1, float(matrix[i, j]))
        for i in range(n)
        for j in range(i + 1, n)
        if matrix[i, j] >= cutoff
    ]
    if mode == "threshknot":
        return {"structure": None, "pairs": threshknot(probabilities, theta), "probabilities": probabilities}
    structure = engine.mea(sequence, params, gamma=gamma)
    pairs = parse_dot_bracket(structure).pairs
    return {"structure": structure, "pairs": pairs, "probabilities": probabilities}


def warm_up(cache: Path) -> None:
    """Compile into ``cache`` (or load from it) every engine function a prediction or the tests use."""
    use_numba_cache(cache)
    from gpu_contrafold import cpu

    for mode in MODES:
        predict("GGGGAAAACCCCAUGCAUGCAUGC", mode=mode)
    cpu.logZ("GGGGAAAACCCC", parameters())


def main(argv: list[str] | None = None) -> None:
    parser = base_parser(__doc__.splitlines()[0], "gpu-contrafold")
    parser.add_argument("--mode", choices=MODES, default="mea")
    parser.add_argument("--gamma", type=float, default=6.0, help="MEA gamma (CONTRAfold's default 6)")
    parser.add_argument("--theta", type=float, default=DEFAULT_THETA, help="ThreshKnot threshold")
    parser.add_argument("--cutoff", type=float, default=DEFAULT_CUTOFF, help="probability cut-off")
    parser.add_argument("--numba-cache", type=Path, help="prebuilt Numba cache (copied when read-only)")
    args = parser.parse_args(argv)
    if args.numba_cache is not None:
        use_numba_cache(args.numba_cache)
    _name, seq = read_query(args.fasta)
    result = predict(seq, mode=args.mode, gamma=args.gamma, theta=args.theta, cutoff=args.cutoff)
    print_pairs_json(
        program=f"gpu-contrafold CPU {args.mode}" + (f" gamma={args.gamma:g}" if args.mode == "mea" else ""),
        version=package_version("gpu-contrafold"),
        sequence=seq,
        pairs=result["pairs"],
        probabilities=result["probabilities"],
        extra={"structure": result["structure"]} if result["structure"] else None,
    )


if __name__ == "__main__":
    main()
