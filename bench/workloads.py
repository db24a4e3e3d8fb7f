"""Workloads shared by the prediction benchmarks (runner, workers, and issue 13's throughput bench).

- :func:`strand_sequences`: real RNA STRAND sequences, the first N by name or N spread over all lengths;
- :func:`strand_slice_dir`: the same entries written as BPSEQ files, for ``manage.py import_rnastrand``;
- :func:`inprocess_predictor`: a catalogue spec's program called inside this process (module imported
  once, no interpreter start-up, no sandbox), the bare compute that is the limit of every prediction bench;
- :func:`run_pool`: predictions over a fixed number of processes (one per core for the limit), each
  process warm before the clock starts, or as one subprocess per prediction (the naive baseline).
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import multiprocessing
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import weakref
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from bench.harness import REPO

#: The archive shipped in data/ (what ``make run`` imports), or COMPARNA_RNASTRAND as in the settings.
STRAND_ARCHIVE = Path(os.environ.get("COMPARNA_RNASTRAND", REPO / "data" / "rna_strand_v2.0_bpseq.tar.gz"))


# ------------------------------------------------------------------------------------------ sequences
@dataclass(frozen=True)
class StrandEntry:
    name: str
    sequence: str
    bpseq: bytes


def _strand_entries(lo: int, hi: int, archive: Path) -> list[StrandEntry]:
    """Every RNA STRAND entry of length lo..hi whose sequence (upper case, T -> U) is only ACGU, by name."""
    from comparna.rna.formats import read_bpseq

    out = []
    with tarfile.open(archive) as tar:
        for member in tar:  # one streaming pass over the gzip stream
            if not (member.isfile() and member.name.endswith(".bpseq")) or "/." in member.name:
                continue
            data = tar.extractfile(member).read()
            seq, _ = read_bpseq(data.decode(errors="replace"))
            seq = seq.upper().replace("T", "U")
            if lo <= len(seq) <= hi and set(seq) <= set("ACGU"):
                out.append(StrandEntry(Path(member.name).stem, seq, data))
    out.sort(key=lambda e: e.name)
    return out


def strand_entries(n: int, *, lo: int = 40, hi: int = 400, spread: bool = True,
                   archive: Path = STRAND_ARCHIVE) -> list[StrandEntry]:
    """``n`` real RNA STRAND entries of length ``lo``..``hi`` (ACGU only), deterministic.

    With ``spread`` they are the entries at evenly spaced ranks of the length order, so every length range
    is represented; otherwise the first ``n`` by name.
    """
    if not archive.is_file():
        raise FileNotFoundError(f"RNA STRAND archive not found at {archive}; set COMPARNA_RNASTRAND")
    entries = _strand_entries(lo, hi, archive)
    if n > len(entries):
        raise ValueError(f"only {len(entries)} RNA STRAND entries of {lo}-{hi} nt; asked for {n}")
    if not spread:
        return entries[:n]
    by_length = sorted(entries, key=lambda e: (len(e.sequence), e.name))
    if n == 1:
        return [by_length[len(by_length) // 2]]
    return [by_length[round(k * (len(by_length) - 1) / (n - 1))] for k in range(n)]


def strand_sequences(n: int, **kw) -> list[tuple[str, str]]:
    """(name, sequence) of :func:`strand_entries`."""
    return [(e.name, e.sequence) for e in strand_entries(n, **kw)]


def strand_slice_dir(entries: Sequence[StrandEntry], dest: Path) -> Path:
    """Write the entries' original BPSEQ files into ``dest`` (input of ``manage.py import_rnastrand``)."""
    dest.mkdir(parents=True, exist_ok=True)
    for e in entries:
        (dest / f"{e.name}.bpseq").write_bytes(e.bpseq)
    return dest


# -------------------------------------------------------------------------------------- in-process
def inprocess_predictor(spec, *, tmp: str | None = None) -> Callable[[str], object]:
    """``predict(sequence) -> ParsedPrediction`` running ``spec``'s program inside this process.

    For a wrapper spec (``{python} -m predictors.programs.X ARGS... {fasta}``) the module is imported once
    here; each call writes the FASTA, calls the module's ``main(argv)`` with stdout captured and parses the
    output with the spec's parser, i.e. exactly the program's work minus interpreter start-up, imports and
    isolation. A wrapper run by a method's own virtualenv (``{venvs}/<name>/bin/python -m
    predictors.programs.X ...``) cannot be imported here: it is imported once in one warm process of that
    interpreter (``bench/venv_worker.py``, started at the first call and kept), which gets each FASTA path
    through a pipe. Raises ``ValueError`` for specs that are not such wrappers (other commands, alignments).
    The FASTA lives in a folder under ``tmp`` (default: the system's), removed with the predictor.
    """
    from predictors.core.parsers import parse_output

    argv = list(spec.argv)
    python = argv[0] if argv else ""
    from predictors.core.venvs import PLACEHOLDER, venvs_dir

    venv = python.startswith(PLACEHOLDER + "/") and python.endswith("/bin/python")
    if (
        spec.input_kind != "single" or (python != "{python}" and not venv) or argv[1:2] != ["-m"]
        or not argv[2].startswith("predictors.programs.") or argv[-1] != "{fasta}"
    ):
        raise ValueError(f"{spec.name} is not an in-process wrapper ({' '.join(argv)})")
    args = argv[3:-1]
    if venv:
        interpreter = python.replace(PLACEHOLDER, str(venvs_dir()), 1)
        if not Path(interpreter).exists():
            raise ValueError(f"{spec.name}: its virtualenv is not built ({interpreter})")
        run = _venv_main(interpreter, argv[2], args)
    else:
        module = importlib.import_module(argv[2])

        def run(path: str) -> str:
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                module.main([*args, path])
            return out.getvalue()

    workdir = Path(tempfile.mkdtemp(prefix="comparna-bench-inproc-", dir=tmp))
    fasta = workdir / "input.fa"

    def predict(sequence: str):
        fasta.write_text(f">query\n{sequence}\n")
        return parse_output(spec.output_format, run(str(fasta)), sequence)

    weakref.finalize(predict, shutil.rmtree, workdir, True)  # the FASTA folder goes with the predictor
    return predict


def _venv_main(interpreter: str, module: str, args: list[str]) -> Callable[[str], str]:
    """``run(fasta_path) -> stdout`` of ``module.main`` in one warm process of another interpreter."""
    state: dict[str, subprocess.Popen] = {}

    def run(path: str) -> str:
        proc = state.get("proc")
        if proc is None:
            proc = state["proc"] = subprocess.Popen(
                [interpreter, str(REPO / "bench" / "venv_worker.py"), module, *args],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1",
                     "MPLCONFIGDIR": tempfile.gettempdir()},
            )
            weakref.finalize(run, proc.kill)
        proc.stdin.write(path + "\n")
        proc.stdin.flush()
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError(f"{module} in {interpreter} ended (exit {proc.wait()})")
        answer = json.loads(line)
        if answer["error"]:
            raise RuntimeError(f"{module}: {answer['error']}")
        return answer["out"]

    return run


def subprocess_predictor(spec, *, parse: bool = True) -> Callable[[str], object]:
    """``predict(sequence)`` as a bare ``subprocess.run`` of the catalogue command (no limits, no sandbox):
    what a naive worker does, paying interpreter start-up and imports for every prediction. Without
    ``parse`` it returns the program's stdout."""
    from predictors.core.parsers import parse_output
    from predictors.core.runners import format_argv

    def predict(sequence: str):
        with tempfile.TemporaryDirectory(prefix="comparna-bench-") as d:
            fasta = Path(d) / "input.fa"
            fasta.write_text(f">query\n{sequence}\n")
            argv = format_argv(spec, sequence=sequence, workdir=d, fasta=str(fasta), alignment=None,
                               python=sys.executable)
            proc = subprocess.run(argv, cwd=d, capture_output=True, text=True, check=True,
                                  env={**os.environ, "PYTHONPATH": str(REPO)})
        return parse_output(spec.output_format, proc.stdout, sequence) if parse else proc.stdout

    return predict


# ---------------------------------------------------------------------------------------------- pools
_WORKER_PREDICTORS: dict[str, Callable[[str], object]] = {}


def _warm(method_names: Sequence[str], how: str, warm_sequence: str, barrier=None, tmp=None) -> None:
    from predictors.catalogue import get_spec

    for name in method_names:
        spec = get_spec(name)
        _WORKER_PREDICTORS[name] = (
            inprocess_predictor(spec, tmp=tmp) if how == "inprocess" else subprocess_predictor(spec))
        if how == "inprocess":  # first-call set-up (parameter tables) is paid before the clock starts
            _WORKER_PREDICTORS[name](warm_sequence)
    if barrier is not None:
        barrier.wait()


def _serve(methods, warm_sequence, ready, tmp, todo, done) -> None:
    """A bench process: warm every method, wait for the others, then run jobs until ``None``."""
    _warm(methods, "inprocess", warm_sequence, ready, tmp)
    while (item := todo.get()) is not None:
        k, job = item
        try:
            done.put((k, _one(job)))
        except Exception as exc:  # noqa: BLE001 - handed to the parent, which raises it
            done.put((k, RuntimeError(repr(exc))))


def _one(job: tuple[str, str]) -> tuple[str, tuple[tuple[int, int], ...], float]:
    name, sequence = job
    start = time.perf_counter()
    parsed = _WORKER_PREDICTORS[name](sequence)
    return name, tuple(sorted(parsed.structure.pairs)), time.perf_counter() - start


@dataclass
class PoolRun:
    wall_s: float
    results: list[tuple[str, tuple[tuple[int, int], ...], float]]  # per job, in job order

    @property
    def cpu_s(self) -> float:
        return sum(r[2] for r in self.results)


def run_pool(jobs: Sequence[tuple[str, str]], *, processes: int, how: str = "inprocess",
             warm_sequence: str = "GGGAAACCCAUAGCGCUAUGG") -> PoolRun:
    """Run ``(method name, sequence)`` jobs over ``processes`` workers; wall time from the first job.

    ``how="inprocess"``: ``processes`` forked Python processes, each with the programs imported and warmed
    up before timing (the limit: bare compute, one process per core). ``how="subprocess"``: ``processes``
    threads each launching one bare subprocess per job (the naive baseline).
    """
    methods = sorted({name for name, _ in jobs})
    if how == "subprocess":
        _warm(methods, how, warm_sequence)
        start = time.perf_counter()
        with ThreadPoolExecutor(max_workers=processes) as pool:
            results = list(pool.map(_one, jobs))
        return PoolRun(time.perf_counter() - start, results)
    if how != "inprocess":
        raise ValueError(f"how must be 'inprocess' or 'subprocess', not {how!r}")
    ctx = multiprocessing.get_context("fork")
    ready = ctx.Barrier(processes + 1)
    todo, done = ctx.Queue(), ctx.Queue()
    # Plain (not daemonic) processes: a program may start a multiprocessing pool of its own (SQUARNA does),
    # which a daemonic pool worker may not. Each ends when it reads None; its FASTA folders live in one
    # the parent removes.
    with tempfile.TemporaryDirectory(prefix="comparna-bench-pool-") as tmp:
        workers = [
            ctx.Process(target=_serve, args=(methods, warm_sequence, ready, tmp, todo, done), daemon=False)
            for _ in range(processes)
        ]
        for w in workers:
            w.start()
        for k, job in enumerate(jobs):
            todo.put((k, job))
        try:
            ready.wait(timeout=300)  # every worker is warm: only now does the clock start
            start = time.perf_counter()
            for _ in workers:
                todo.put(None)
            results: list = [None] * len(jobs)
            for _ in jobs:
                k, result = done.get(timeout=3600)
                if isinstance(result, BaseException):
                    raise RuntimeError(f"job {jobs[k]} failed in a bench process") from result
                results[k] = result
            wall = time.perf_counter() - start
        finally:
            for w in workers:
                w.join(timeout=5)
                if w.is_alive():
                    w.kill()
                    w.join()
    return PoolRun(wall, results)
