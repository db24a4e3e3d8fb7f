"""Shared input/output helpers of the wrappers (standard library only, plus comparna.rna), and the batch
entry that runs a wrapper's ``main`` over many targets in one process (:func:`batch_main`)."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
import traceback
from collections.abc import Callable, Iterable
from importlib.metadata import version as dist_version

from comparna.rna.formats import read_fasta

#: Pair probabilities below this are not printed (sparse storage for precision-recall curves).
DEFAULT_CUTOFF = 1e-3


def package_version(dist: str) -> str:
    """Installed version of a distribution, e.g. ``package_version("ViennaRNA") == "2.7.2"``."""
    return dist_version(dist)


def base_parser(description: str, dist: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("fasta", help="FASTA file; the first sequence is folded")
    parser.add_argument("--version", action="version", version=f"%(prog)s {dist} {package_version(dist)}")
    return parser


def read_query(path: str) -> tuple[str, str]:
    """(name, sequence) of the first FASTA record, upper case with T -> U (what the folding codes expect)."""
    with open(path) as f:
        records = read_fasta(f.read())
    if not records:
        sys.exit(f"{path}: no FASTA record")
    name, seq = records[0]
    return name, seq.upper().replace("T", "U")


def print_dot_bracket(name: str, sequence: str, structure: str, energy: float | None = None) -> None:
    """ViennaRNA-style output: header, sequence, structure and energy in parentheses."""
    suffix = f" ({energy:6.2f})" if energy is not None else ""
    print(f">{name}\n{sequence}\n{structure}{suffix}")


def print_pairs_json(
    *,
    program: str,
    version: str,
    sequence: str,
    pairs: Iterable[tuple[int, int]],
    probabilities: Iterable[tuple[int, int, float]] | None = None,
    extra: dict | None = None,
) -> None:
    """Print ``{"pairs": [[i, j], ...], "probabilities": [[i, j, p], ...], ...}`` (1-based)."""
    out: dict = {"program": program, "version": version, "length": len(sequence)}
    out["pairs"] = sorted([int(i), int(j)] for i, j in pairs)
    if probabilities is not None:
        out["probabilities"] = sorted([int(i), int(j), float(f"{p:.6g}")] for i, j, p in probabilities)
    out.update(extra or {})
    json.dump(out, sys.stdout, separators=(",", ":"))
    sys.stdout.write("\n")


# -- batch entry ------------------------------------------------------------------------------------------
#: Files of one target of a batch, in its own directory ``t<k>/`` of the work dir.
BATCH_STDOUT = ".comparna-stdout"
BATCH_STDERR = ".comparna-stderr"


def _fflush_c() -> None:
    """Flush C stdio buffers (a compiled extension may print through them) before stdout changes file."""
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).fflush(None)


def _call_main(main: Callable[[list[str]], object], argv: list[str]) -> tuple[int, bool]:
    """(exit status, whether the process may go on) of ``main(argv)``, as ``python -m`` would exit.

    ``SystemExit`` is an ordinary end (its code, or 1 with the message on stderr). Any other exception is
    printed like an uncaught one (status 1), and the batch stops after it: the program's state is suspect.
    """
    try:
        main(argv)
    except SystemExit as exc:
        code = exc.code
        if code is None:
            return 0, True
        if isinstance(code, int):
            return code & 0xFF, True
        print(code, file=sys.stderr)
        return 1, True
    except BaseException:  # noqa: BLE001 - reported as the interpreter would, then the batch ends
        traceback.print_exc()
        return 1, False
    return 0, True


def run_batch(
    main: Callable[[list[str]], object],
    args: list[str],
    *,
    fasta: str,
    progress: str,
    stop_after_s: float,
) -> int:
    """Run ``main`` once per record of the multi-FASTA ``fasta``, in this one process.

    Record ``k`` is written to ``t<k>/input.fa``, which replaces ``fasta`` in ``args``; ``main`` runs with
    ``t<k>/`` as current directory and its stdout/stderr (file descriptors 1 and 2, so that compiled code
    and child processes are captured too) in ``t<k>/`` (:data:`BATCH_STDOUT`, :data:`BATCH_STDERR`).
    ``progress`` gets one line as each target starts (``start k``) and ends (``end k status seconds``,
    the time measured around ``main`` alone), then ``done``; ``stop`` when ``stop_after_s`` have passed
    after a target (the rest is left to another launch), ``abort`` after an exception that was not a
    ``SystemExit``. The worker reads this file to tell which target a crash or a hang belongs to.
    """
    with open(fasta) as f:
        records = read_fasta(f.read())
    top = os.getcwd()
    saved = os.dup(1), os.dup(2)
    began = time.monotonic()
    with open(progress, "a", buffering=1) as log:
        for k, (name, seq) in enumerate(records):
            if k and time.monotonic() - began > stop_after_s:
                log.write("stop\n")
                return 0
            d = os.path.join(top, f"t{k}")
            os.mkdir(d)
            with open(os.path.join(d, "input.fa"), "w") as f:
                f.write(f">{name}\n{seq}\n")
            argv = [os.path.join(d, "input.fa") if a == fasta else a for a in args]
            log.write(f"start {k}\n")
            sys.stdout.flush()
            sys.stderr.flush()
            out = os.open(os.path.join(d, BATCH_STDOUT), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            err = os.open(os.path.join(d, BATCH_STDERR), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            os.dup2(out, 1)
            os.dup2(err, 2)
            os.close(out)
            os.close(err)
            os.chdir(d)
            start = time.perf_counter()
            try:
                status, go_on = _call_main(main, argv)
            finally:
                seconds = time.perf_counter() - start
                sys.stdout.flush()
                sys.stderr.flush()
                _fflush_c()
                os.chdir(top)
                os.dup2(saved[0], 1)
                os.dup2(saved[1], 2)
            log.write(f"end {k} {status} {seconds:.6f}\n")
            if not go_on:
                log.write("abort\n")
                return 3
        log.write("done\n")
    return 0


def batch_main(argv: list[str] | None = None) -> int:
    """``python -m predictors.programs._common --batch FASTA --progress FILE --stop-after-s S -- MODULE
    ARGS...``: :func:`run_batch` of ``MODULE.main`` (a wrapper of :mod:`predictors.programs`), the FASTA
    argument of ``ARGS`` being ``FASTA``. The predictor is imported and warmed up once for the batch."""
    import importlib

    argv = list(sys.argv[1:] if argv is None else argv)
    keys = ("--batch", "--progress", "--stop-after-s")
    if len(argv) < 8 or argv[0:6:2] != list(keys) or argv[6] != "--":
        sys.exit("usage: _common --batch FASTA --progress FILE --stop-after-s S -- MODULE ARGS...")
    fasta, progress, stop_after = argv[1], argv[3], float(argv[5])
    module = argv[7]
    if not module.startswith("predictors.programs.") or module.rsplit(".", 1)[-1].startswith("_"):
        sys.exit(f"{module}: not a predictor program")
    main = importlib.import_module(module).main
    return run_batch(main, argv[8:], fasta=fasta, progress=progress, stop_after_s=stop_after)


if __name__ == "__main__":
    sys.exit(batch_main())
