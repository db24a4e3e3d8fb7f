"""Sequence redundancy removal and novelty checks with the real CD-HIT-EST (SCIENCE.md §3).

Rule: two sequences are redundant when CD-HIT-EST aligns them with >= 90 % global identity (identical
bases / length of the shorter sequence, CD-HIT's ``-G 1`` default) and the alignment covers >= 70 % of the
longer sequence (``-aL 0.7``). Reference: Li & Godzik, Bioinformatics 2006, 22:1658; Fu et al.,
Bioinformatics 2012, 28:3150.

CD-HIT is a greedy incremental clusterer: sequences are sorted by decreasing length and each one either joins
the first representative it matches or becomes a new representative. We write the input already sorted by
(decreasing length, id), and CD-HIT's sort keeps input order for equal lengths, so **the kept entry of each
cluster is its longest sequence, ties going to the smallest id** -- the result does not depend on dict order.

Two CD-HIT 4.8.1 defects are worked around here (both reproduced with the Debian binary, see the tests):

* With ``-aL`` a sequence fails to join an identical representative when the representative stored just
  before that one in CD-HIT's word table is much longer (roughly > len/aL + 30). We therefore put a spacer
  made only of ``N`` (no k-mers, so it can match nothing) in front of the first sequence of every length;
  a representative's table predecessor is then never longer than itself. Spacers are dropped from the result
  and we check that each stayed a lone representative.
* ``cd-hit-est-2d`` run with one thread stops comparing db2 sequences at the first one shorter than the
  shortest db1 sequence allows, assuming db2 is sorted; we sort it. Its coverage options apply to the db1
  sequence, so we run it in both directions (see :func:`find_similar`).

Only the plus strand is compared (``-r 0``): these are RNA molecules, not double-stranded reads.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "CdHitError",
    "ClusterResult",
    "cdhit_word_size",
    "find_similar",
    "remove_redundant",
]

# Prefix of the N-only spacer records; user ids may not start with it.
SPACER_PREFIX = "__comparna_cdhit_spacer_"

_CLSTR_LINE = re.compile(r"^(\d+)\t(\d+)nt, >(.*)\.\.\. (\*|at (?:[0-9:]+/)?([+-])/([0-9.]+)%)$")
_VERSION = re.compile(r"CD-HIT, V([0-9][0-9.]*)")
_ALLOWED = frozenset("ACGTUN")


class CdHitError(RuntimeError):
    """CD-HIT-EST is missing, failed, or wrote output we cannot interpret.

    Parameters
    ----------
    message : str
        What went wrong.
    returncode : int, optional
        Exit status of the program when it ran.
    stderr_tail : str
        The last lines of its standard error (and output), for the log.
    """

    def __init__(self, message: str, *, returncode: int | None = None, stderr_tail: str = ""):
        self.returncode = returncode
        self.stderr_tail = stderr_tail
        full = message if not stderr_tail else f"{message}\n--- cd-hit output (tail) ---\n{stderr_tail}"
        super().__init__(full)


@dataclass(frozen=True)
class ClusterResult:
    """Outcome of :func:`remove_redundant`.

    Attributes
    ----------
    representatives : tuple of str
        Ids kept, in CD-HIT order (decreasing length, then id).
    member_of : Mapping[str, str]
        For every removed id, the representative it was clustered with.
    identity : Mapping[str, float]
        For every removed id, CD-HIT's identity (percent) to its representative.
    command : tuple of str
        The CD-HIT command line (temporary paths included), for provenance.
    version : str
        CD-HIT version reported by the program, e.g. ``"4.8.1"``.
    """

    representatives: tuple[str, ...]
    member_of: Mapping[str, str] = field(default_factory=dict)
    identity: Mapping[str, float] = field(default_factory=dict)
    command: tuple[str, ...] = ()
    version: str = ""

    def clusters(self) -> dict[str, list[str]]:
        """Map each representative to the sorted ids clustered with it (empty list for singletons)."""
        out: dict[str, list[str]] = {r: [] for r in self.representatives}
        for member, rep in self.member_of.items():
            out[rep].append(member)
        for v in out.values():
            v.sort()
        return out


def cdhit_word_size(identity: float) -> int:
    """Word size ``-n`` for CD-HIT-EST at a given identity threshold.

    Follows the CD-HIT user's guide table for cd-hit-est (10-11 for 0.95-1.0, 8-9 for 0.90-0.95, 7 for
    0.88-0.90, 6 for 0.85-0.88, 5 for 0.80-0.85); cd-hit-est refuses thresholds below 0.8.
    """
    if not 0.8 <= identity <= 1.0:
        raise ValueError(f"cd-hit-est needs an identity threshold in [0.8, 1.0], got {identity}")
    for lower, n in ((0.95, 10), (0.90, 8), (0.88, 7), (0.85, 6)):
        if identity >= lower:
            return n
    return 5


def _default_threads() -> int:
    return max(1, min(2, os.cpu_count() or 1))


def _check_sequences(sequences: Mapping[str, str], what: str, min_length: int) -> dict[str, str]:
    """Validate ids and sequences; return DNA-alphabet copies (CD-HIT-EST's native alphabet)."""
    out = {}
    for sid, seq in sequences.items():
        if not sid or any(c.isspace() for c in sid) or sid.startswith(">") or sid.startswith(SPACER_PREFIX):
            raise ValueError(
                f"{what}: unusable sequence id {sid!r} (empty, whitespace, '>' or reserved prefix)"
            )
        s = seq.upper()
        bad = set(s) - _ALLOWED
        if bad:
            symbols = "".join(sorted(bad))
            raise ValueError(f"{what}: sequence {sid!r} has symbols {symbols!r}; only ACGTUN allowed")
        if len(s) < min_length:
            # CD-HIT silently drops sequences not longer than -l; refuse instead of losing them.
            raise ValueError(
                f"{what}: sequence {sid!r} has {len(s)} nt, shorter than the word size {min_length}"
            )
        out[sid] = s.replace("U", "T")
    return out


def _sorted_ids(seqs: Mapping[str, str]) -> list[str]:
    return sorted(seqs, key=lambda k: (-len(seqs[k]), k))


def _write_fasta(path: Path, seqs: Mapping[str, str], *, spacers: bool) -> list[str]:
    """Write records sorted by (decreasing length, id); return the spacer ids written."""
    spacer_ids = []
    prev_len = None
    with open(path, "w", encoding="ascii") as fh:
        for sid in _sorted_ids(seqs):
            s = seqs[sid]
            if spacers and len(s) != prev_len:
                spid = f"{SPACER_PREFIX}{len(s)}"
                spacer_ids.append(spid)
                fh.write(f">{spid}\n{'N' * len(s)}\n")
            prev_len = len(s)
            fh.write(f">{sid}\n{s}\n")
    return spacer_ids


def _run(cmd: list[str]) -> str:
    exe = cmd[0]
    if shutil.which(exe) is None:
        raise CdHitError(
            f"{exe!r} not found; install CD-HIT (Debian package 'cd-hit') or pass its path"
        )
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, errors="replace", check=False)
    except OSError as exc:
        raise CdHitError(f"cannot run {exe!r}: {exc}") from exc
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + "\n" + proc.stderr).strip().splitlines()[-15:])
        raise CdHitError(f"{exe} exited with status {proc.returncode}", returncode=proc.returncode,
                         stderr_tail=tail)
    return proc.stdout


def _version(stdout: str) -> str:
    m = _VERSION.search(stdout)
    return m.group(1) if m else ""


def _parse_clstr(path: Path) -> list[list[tuple[str, float | None]]]:
    """Parse a .clstr file into clusters; each a list of (id, identity or None for the representative).

    The representative (``*``) is moved to the front of its cluster.
    """
    clusters: list[list[tuple[str, float | None]]] = []
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise CdHitError(f"cd-hit produced no cluster file {path.name}: {exc}") from exc
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        if line.startswith(">Cluster"):
            clusters.append([])
            continue
        m = _CLSTR_LINE.match(line)
        if m is None or not clusters:
            raise CdHitError(f"unexpected line {n} in {path.name}: {line!r}")
        sid = m.group(3)
        if m.group(4) == "*":
            clusters[-1].insert(0, (sid, None))
        else:
            clusters[-1].append((sid, float(m.group(6))))
    for c in clusters:
        if not c or c[0][1] is not None:
            raise CdHitError(f"a cluster in {path.name} has no representative")
    return clusters


def _common_options(identity: float, coverage_longer: float, word_size: int | None, threads: int | None,
                    memory_mb: int, band_width: int) -> tuple[int, list[str]]:
    if not 0.0 <= coverage_longer <= 1.0:
        raise ValueError(f"coverage_longer must be in [0, 1], got {coverage_longer}")
    n = word_size if word_size is not None else cdhit_word_size(identity)
    t = threads if threads is not None else _default_threads()
    opts = [
        "-c", f"{identity:g}",
        "-aL", f"{coverage_longer:g}",
        "-n", str(n),
        "-l", str(n - 1),  # keep every sequence with at least one word; shorter ones are refused earlier
        "-r", "0",
        "-d", "0",
        "-b", str(band_width),
        "-M", str(memory_mb),
        "-T", str(t),
    ]
    return n, opts


def remove_redundant(
    sequences: Mapping[str, str],
    *,
    identity: float = 0.9,
    coverage_longer: float = 0.7,
    cdhit_path: str = "cd-hit-est",
    threads: int | None = None,
    workdir: str | os.PathLike[str] | None = None,
    word_size: int | None = None,
    memory_mb: int = 2000,
    band_width: int = 20,
) -> ClusterResult:
    """Cluster sequences with CD-HIT-EST and return the representatives kept.

    Parameters
    ----------
    sequences : Mapping[str, str]
        id -> sequence (A, C, G, U/T, N; any case). Ids must be unique, without whitespace.
    identity : float
        ``-c``: global identity threshold (identical bases / length of the shorter sequence).
    coverage_longer : float
        ``-aL``: minimal fraction of the longer sequence covered by the alignment.
    cdhit_path : str
        The cd-hit-est executable.
    threads : int, optional
        ``-T``; default min(2, CPUs). Results do not depend on it.
    workdir : path, optional
        Where the temporary directory for CD-HIT files is made (default: system temp).
    word_size : int, optional
        ``-n``; default from :func:`cdhit_word_size` (8 for 0.9).
    memory_mb : int
        ``-M`` memory limit in MB (0 = unlimited).
    band_width : int
        ``-b`` band of the banded alignment (CD-HIT default 20). Long sequences differing by a large indel
        need a wider band to be recognised as similar.

    Returns
    -------
    ClusterResult
        The longest sequence of each cluster is kept (ties: smallest id); every other id maps to it.

    Raises
    ------
    ValueError
        Bad ids, symbols, thresholds, or a sequence shorter than the word size.
    CdHitError
        cd-hit-est missing, failing, or its output inconsistent with the input.
    """
    n, opts = _common_options(identity, coverage_longer, word_size, threads, memory_mb, band_width)
    seqs = _check_sequences(sequences, "remove_redundant", n)
    if not seqs:
        return ClusterResult(representatives=())
    with tempfile.TemporaryDirectory(prefix="comparna-cdhit-", dir=workdir) as tmp:
        inp, out = Path(tmp) / "input.fa", Path(tmp) / "clusters"
        spacer_ids = set(_write_fasta(inp, seqs, spacers=True))
        cmd = [cdhit_path, "-i", str(inp), "-o", str(out), *opts]
        stdout = _run(cmd)
        clusters = _parse_clstr(Path(str(out) + ".clstr"))

    reps: list[str] = []
    member_of: dict[str, str] = {}
    ident: dict[str, float] = {}
    seen: set[str] = set()
    for cluster in clusters:
        rep = cluster[0][0]
        if rep in spacer_ids:
            if len(cluster) != 1:
                raise CdHitError(f"internal N spacer {rep} clustered with {[c[0] for c in cluster[1:]]}")
            seen.add(rep)
            continue
        reps.append(rep)
        for sid, pc in cluster[1:]:
            if sid in spacer_ids:
                raise CdHitError(f"internal N spacer {sid} clustered with {rep}")
            member_of[sid] = rep
            ident[sid] = pc if pc is not None else 100.0
        seen.update(s for s, _ in cluster)
    expected = set(seqs) | spacer_ids
    if seen != expected:
        missing = sorted(expected - seen)[:5]
        extra = sorted(seen - expected)[:5]
        raise CdHitError(f"cd-hit output does not match its input (missing {missing}, unknown {extra})")
    order = {sid: k for k, sid in enumerate(_sorted_ids(seqs))}
    reps.sort(key=order.__getitem__)
    return ClusterResult(tuple(reps), member_of, ident, tuple(cmd), _version(stdout))


def _run_2d(cdhit2d_path: str, db1: Mapping[str, str], db2: Mapping[str, str], opts: list[str],
            tmp: Path, tag: str) -> dict[str, str]:
    """One cd-hit-est-2d run; return db2 id -> db1 id for db2 sequences matched (db1 longer or equal)."""
    f1, f2, out = tmp / f"{tag}-db1.fa", tmp / f"{tag}-db2.fa", tmp / f"{tag}-out"
    spacer_ids = set(_write_fasta(f1, db1, spacers=True))
    _write_fasta(f2, db2, spacers=False)
    # Default -s2 1.0: a db2 sequence is only compared with db1 sequences at least as long, so -aL (which
    # cd-hit-est-2d applies to the db1 sequence) is the coverage of the longer one.
    cmd = [cdhit2d_path, "-i", str(f1), "-i2", str(f2), "-o", str(out), *opts]
    _run(cmd)
    hits: dict[str, str] = {}
    for cluster in _parse_clstr(Path(str(out) + ".clstr")):
        ref = cluster[0][0]
        for sid, _ in cluster[1:]:
            if ref in spacer_ids or sid not in db2:
                raise CdHitError(f"cd-hit-est-2d matched {sid!r} to {ref!r}, which was not asked for")
            hits[sid] = ref
    return hits


def find_similar(
    new: Mapping[str, str],
    reference: Mapping[str, str],
    *,
    identity: float = 0.9,
    coverage_longer: float = 0.7,
    cdhit2d_path: str = "cd-hit-est-2d",
    threads: int | None = None,
    workdir: str | os.PathLike[str] | None = None,
    word_size: int | None = None,
    memory_mb: int = 2000,
    band_width: int = 20,
) -> dict[str, str | None]:
    """For each new sequence, a reference sequence it is redundant with, or None (the PDB novelty rule).

    Same rule as :func:`remove_redundant` (identity over the shorter sequence, coverage of the longer),
    checked with ``cd-hit-est-2d`` in two directions because the program applies ``-aL`` to its db1
    sequence and only compares db1 sequences at least as long as the db2 one:

    1. db1 = references, db2 = new: references at least as long as the new sequence;
    2. db1 = still-unmatched new sequences, db2 = references: references shorter than the new sequence.
       A reference is reported for at most one db1 sequence per run, so this step is repeated without the
       new sequences already matched until a run finds nothing more.

    New sequences are not compared with each other; cluster a weekly batch with :func:`remove_redundant`
    first if that matters.

    Returns
    -------
    dict
        new id -> matching reference id (the first CD-HIT found), or None when the sequence is novel.
    """
    n, opts = _common_options(identity, coverage_longer, word_size, threads, memory_mb, band_width)
    new_s = _check_sequences(new, "find_similar (new)", n)
    ref_s = _check_sequences(reference, "find_similar (reference)", n)
    result: dict[str, str | None] = {k: None for k in new_s}
    if not new_s or not ref_s:
        return result
    with tempfile.TemporaryDirectory(prefix="comparna-cdhit2d-", dir=workdir) as tmp_s:
        tmp = Path(tmp_s)
        result.update(_run_2d(cdhit2d_path, ref_s, new_s, opts, tmp, "a"))
        round_no = 0
        while True:
            todo = {k: v for k, v in new_s.items() if result[k] is None}
            if not todo:
                break
            round_no += 1
            hits = _run_2d(cdhit2d_path, todo, ref_s, opts, tmp, f"b{round_no}")
            found: dict[str, str] = {}
            for ref_id, new_id in sorted(hits.items()):
                found.setdefault(new_id, ref_id)
            if not found:
                break
            result.update(found)
    return result
