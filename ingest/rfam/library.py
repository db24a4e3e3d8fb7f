"""The Rfam library: covariance models pressed for ``cmscan`` plus the seed alignments, with a version.

A library is a directory holding

- ``Rfam.cm`` — all covariance models (Infernal 1.1 format, calibrated so that ``cmscan`` reports
  E-values), pressed with ``cmpress`` (``Rfam.cm.i1{m,i,f,p}``; the ``.i1i`` SSI index also lets ``cmfetch``
  take one model out by name or accession);
- ``Rfam.seed`` — the Stockholm seed alignments, each with ``#=GF AC`` and ``#=GF ID``;
- ``rfam_library.json`` — the manifest: the version string recorded with every family assignment, and per
  family its accession, id, description, consensus length, number of seed sequences and the byte range of
  its seed alignment in ``Rfam.seed`` (so one seed is read without parsing the whole file).

Default library (tests, development, the default install)
---------------------------------------------------------
:func:`build_library` assembles the real Rfam families that Debian's ``infernal-doc`` ships under
``/usr/share/doc/infernal/examples/testsuite/`` (:data:`TESTSUITE_DIR`). Only single-model calibrated
Infernal 1.1 files ``*.c.cm`` are used: the multi-model ``4.c.cm``/``5.c.cm`` duplicate the single files
(and concatenating them makes ``cmpress`` fail with only "Working..." on stdout); ``*.1p0.c.cm`` are in the
old Infernal 1.0 format. ``tRNA1415G`` is excluded by default because it is a second tRNA model (built from
the Sprinzl alignment of 1415 tRNAs) that would compete with RF00005 for every tRNA. Each model is paired
with the seed whose ``#=GF ID`` (or, for a single-alignment file without ID, the file name stem) equals the
model NAME and whose number of sequences equals the model's NSEQ.

The testsuite's ``rnaseP-eubact`` and ``srp-euk`` models carry no Rfam accession. They get the derived,
stable accession ``TS_<NAME>`` (:func:`derived_accession`), written into the CM (``ACC`` line) and seed
(``#=GF AC``) — deliberately not an ``RFnnnnn`` number, since it is not known which Rfam release they came
from. ``tRNA-Sec`` (RF01852) has a model but no seed in the testsuite: it stays in the CM database (so
selenocysteine tRNAs are assigned to their own family rather than to tRNA) but has no comparative input.

The version string is ``"infernal-doc testsuite (INFERNAL x.y.z) sha256:<12 hex>"``, the checksum taken over
the assembled ``Rfam.cm`` and ``Rfam.seed``, so any change of content changes the version.

A full Rfam release (deployments)
---------------------------------
Point the setting ``RFAM_LIBRARY`` (or the environment variable ``COMPARNA_RFAM_LIBRARY``) at a directory
prepared like this (Rfam 14.10 as example; Kalvari et al., NAR 2021)::

    mkdir -p /srv/rfam/14.10 && cd /srv/rfam/14.10
    wget https://ftp.ebi.ac.uk/pub/databases/Rfam/14.10/Rfam.cm.gz
    wget https://ftp.ebi.ac.uk/pub/databases/Rfam/14.10/Rfam.seed.gz
    gunzip Rfam.cm.gz Rfam.seed.gz
    python manage.py build_rfam_library --release "Rfam 14.10" /srv/rfam/14.10

``--release`` calls :func:`index_release`, which runs ``cmpress`` on ``Rfam.cm`` and writes the manifest
(the release's models are already calibrated and carry accessions). Re-run family assignment when the
version changes.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

from comparna.rna.stockholm import StockholmAlignment, read_stockholm

REPO_ROOT = Path(__file__).resolve().parents[2]
LIBRARY_ENV = "COMPARNA_RFAM_LIBRARY"
TESTSUITE_DIR = Path("/usr/share/doc/infernal/examples/testsuite")
MANIFEST_NAME = "rfam_library.json"
CM_NAME = "Rfam.cm"
SEED_NAME = "Rfam.seed"
DEFAULT_EXCLUDE = frozenset({"tRNA1415G"})
PRESS_SUFFIXES = (".i1m", ".i1i", ".i1f", ".i1p")


class RfamLibraryError(RuntimeError):
    """The library cannot be built or read (missing files, a failing Infernal program)."""


@dataclass(frozen=True)
class RfamFamily:
    """One family of the library.

    ``seed_offset``/``seed_size`` give the byte range of its seed alignment in ``Rfam.seed`` (``None`` when
    the library has no seed for it).
    """

    accession: str
    id: str
    description: str
    clen: int
    nseq: int
    seed_offset: int | None = None
    seed_size: int | None = None

    @property
    def has_seed(self) -> bool:
        return self.seed_offset is not None


@dataclass(frozen=True)
class RfamLibrary:
    """A prepared library directory (see the module docstring)."""

    root: Path
    version: str
    families: dict[str, RfamFamily] = field(hash=False, compare=False)

    @property
    def cm_path(self) -> Path:
        return self.root / CM_NAME

    @property
    def seed_path(self) -> Path:
        return self.root / SEED_NAME

    def family(self, key: str) -> RfamFamily:
        """The family with accession or id ``key``; KeyError if absent."""
        if key in self.families:
            return self.families[key]
        for fam in self.families.values():
            if fam.id == key:
                return fam
        raise KeyError(key)

    def seed_text(self, key: str) -> str | None:
        """The Stockholm text of family ``key``'s seed (accession or id), or None when there is none."""
        fam = self.family(key)
        if fam.seed_offset is None or fam.seed_size is None:
            return None
        with open(self.seed_path, "rb") as fh:
            fh.seek(fam.seed_offset)
            # Rfam.seed has been latin-1 in some releases; latin-1 decodes any byte.
            return fh.read(fam.seed_size).decode("latin-1")

    def read_seed(self, key: str) -> StockholmAlignment | None:
        """The seed alignment of family ``key`` (accession or id), or None when the library has none."""
        text = self.seed_text(key)
        if text is None:
            return None
        (alignment,) = read_stockholm(text)
        return alignment

    def fetch_cm(self, key: str, dest: Path) -> Path:
        """Write the single covariance model of family ``key`` to ``dest`` with ``cmfetch``."""
        fam = self.family(key)
        _run(["cmfetch", "-o", str(dest), str(self.cm_path), fam.accession])
        return dest


def derived_accession(name: str) -> str:
    """Stable accession for a testsuite model without one: ``TS_<NAME>`` (never an Rfam number)."""
    return f"TS_{name}"


def load_library(root: str | os.PathLike[str]) -> RfamLibrary:
    """Open a prepared library directory (reads the manifest)."""
    root = Path(root)
    manifest = root / MANIFEST_NAME
    if not manifest.is_file():
        raise RfamLibraryError(f"{manifest} not found: build or index the library first")
    data = json.loads(manifest.read_text())
    for suffix in PRESS_SUFFIXES:
        if not (root / (CM_NAME + suffix)).is_file():
            raise RfamLibraryError(f"{root / CM_NAME} is not pressed (missing {suffix}); run cmpress")
    families = {f["accession"]: RfamFamily(**f) for f in data["families"]}
    return RfamLibrary(root=root, version=data["version"], families=families)


def default_library_path() -> Path:
    """``$COMPARNA_RFAM_LIBRARY`` if set, else ``<repo>/var/rfam``."""
    env = os.environ.get(LIBRARY_ENV)
    return Path(env) if env else REPO_ROOT / "var" / "rfam"


def resolve_library(path: str | os.PathLike[str] | None = None, *, build_missing: bool = True) -> RfamLibrary:
    """Open the configured library, building the default one on first use.

    Parameters
    ----------
    path : path, optional
        The configured location (Django setting ``RFAM_LIBRARY``); None → :func:`default_library_path`.
    build_missing : bool
        When the directory holds no manifest, build it from :data:`TESTSUITE_DIR` (a full Rfam release
        must be indexed explicitly, see the module docstring).
    """
    root = Path(path) if path else default_library_path()
    if (root / MANIFEST_NAME).is_file() or not build_missing:
        return load_library(root)
    root.parent.mkdir(parents=True, exist_ok=True)
    # Several workers may hit the first use at once: one builds, the others wait and then read it.
    with open(root.parent / f".{root.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (root / MANIFEST_NAME).is_file():
            build_library(TESTSUITE_DIR, root)
    return load_library(root)


def infernal_version() -> str:
    """The installed Infernal version, e.g. ``"1.1.4"``."""
    out = _run(["cmscan", "-h"])
    m = re.search(r"INFERNAL (\S+)", out)
    if not m:
        raise RfamLibraryError("cannot read the Infernal version from 'cmscan -h'")
    return m.group(1)


def build_library(
    source_dir: str | os.PathLike[str] = TESTSUITE_DIR,
    dest_dir: str | os.PathLike[str] | None = None,
    *,
    exclude: frozenset[str] = DEFAULT_EXCLUDE,
    label: str | None = None,
) -> RfamLibrary:
    """Assemble single-model calibrated ``*.c.cm`` files and their seeds into a pressed library.

    Parameters
    ----------
    source_dir : path
        Directory with ``*.c.cm`` and ``*.sto`` files (default: the ``infernal-doc`` testsuite).
    dest_dir : path, optional
        Library directory to create (default :func:`default_library_path`). It is built in a
        temporary sibling and renamed into place, so a half-built library is never seen; an existing
        ``dest_dir`` is replaced.
    exclude : set of str
        Model names to leave out (default: ``tRNA1415G``, see the module docstring).
    label : str, optional
        First part of the version string; default ``"infernal-doc testsuite"`` for :data:`TESTSUITE_DIR`,
        else ``"assembled from <source_dir name>"``.

    Returns
    -------
    RfamLibrary
    """
    source = Path(source_dir)
    dest = Path(dest_dir) if dest_dir is not None else default_library_path()
    if label is None:
        same = source.resolve() == TESTSUITE_DIR.resolve()
        label = "infernal-doc testsuite" if same else f"assembled from {source.name}"
    models = _collect_models(source, exclude)
    if not models:
        raise RfamLibraryError(f"no single-model calibrated *.c.cm files in {source}")
    seeds = _collect_seeds(source)

    cm_parts: list[str] = []
    seed_parts: list[str] = []
    skipped: list[str] = []
    for name, (path, header, text) in models.items():
        accession = header.get("ACC") or derived_accession(name)
        cm_parts.append(_with_accession(text, accession))
        seed = seeds.get(name)
        if seed is not None and len(seed[1].names) != int(header["NSEQ"]):
            skipped.append(f"seed of {name}: {len(seed[1].names)} sequences, model NSEQ {header['NSEQ']}")
            seed = None
        if seed is not None:
            seed_parts.append(_with_gf(seed[0], accession, name, header.get("DESC")))
        else:
            skipped.append(f"no seed for {name} ({path.name})")

    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}-", dir=dest.parent))
    tmp.chmod(0o755)  # mkdtemp makes it private; the library is read by web and worker processes
    try:
        (tmp / CM_NAME).write_text("".join(cm_parts))
        (tmp / SEED_NAME).write_text("".join(seed_parts), encoding="latin-1")
        digest = hashlib.sha256()
        for part in (CM_NAME, SEED_NAME):
            digest.update((tmp / part).read_bytes())
        version = f"{label} (INFERNAL {infernal_version()}) sha256:{digest.hexdigest()[:12]}"
        index_release(tmp, version, notes=skipped)
        if dest.exists():
            old = dest.with_name(f".{dest.name}-old-{os.getpid()}")
            dest.rename(old)
            tmp.rename(dest)
            shutil.rmtree(old)
        else:
            tmp.rename(dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return load_library(dest)


def index_release(root: str | os.PathLike[str], version: str, *, notes: list[str] | None = None):
    """Press ``root/Rfam.cm`` (if needed) and write the manifest for it and ``root/Rfam.seed``.

    This is all a full Rfam release needs (see the module docstring). Families are read from the CM
    headers; each is linked to the seed alignment with the same ``#=GF AC`` (or ``#=GF ID``).
    """
    root = Path(root)
    cm, seed = root / CM_NAME, root / SEED_NAME
    if not cm.is_file():
        raise RfamLibraryError(f"{cm} not found")
    pressed = [root / (CM_NAME + s) for s in PRESS_SUFFIXES]
    if not all(p.is_file() and p.stat().st_mtime >= cm.stat().st_mtime for p in pressed):
        _run(["cmpress", "-F", str(cm)])
    headers = _scan_cm_headers(cm)
    ranges = _scan_seed_ranges(seed) if seed.is_file() else {}
    families = []
    for h in headers:
        rng = ranges.get(h["ACC"]) or ranges.get(h["NAME"])
        families.append(
            RfamFamily(
                accession=h["ACC"],
                id=h["NAME"],
                description=h.get("DESC", ""),
                clen=int(h["CLEN"]),
                nseq=int(h["NSEQ"]),
                seed_offset=rng[0] if rng else None,
                seed_size=rng[1] if rng else None,
            )
        )
    manifest = {
        "version": version,
        "cm": CM_NAME,
        "seed": SEED_NAME,
        "notes": list(notes or []),
        "families": [asdict(f) for f in families],
    }
    (root / MANIFEST_NAME).write_text(json.dumps(manifest, indent=1) + "\n")
    return load_library(root)


# --- helpers ---------------------------------------------------------------------------------------------


def _run(argv: list[str]) -> str:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    except FileNotFoundError as exc:
        raise RfamLibraryError(f"{argv[0]} not found: install Infernal") from exc
    if proc.returncode != 0:
        raise RfamLibraryError(
            f"{' '.join(argv)} failed ({proc.returncode}): {proc.stderr.strip() or proc.stdout.strip()}"
        )
    return proc.stdout


def _cm_header(text: str) -> dict[str, str]:
    """Header tags of the first (CM) section of an Infernal 1.1 model, up to the parameter block."""
    header: dict[str, str] = {}
    for line in text.splitlines()[1:]:
        tag, _, value = line.partition(" ")
        if tag in ("CM", "HMMER3/f") or not tag.isupper():
            break
        header.setdefault(tag, value.strip())
    return header


def _collect_models(source: Path, exclude: frozenset[str]) -> dict[str, tuple[Path, dict[str, str], str]]:
    models: dict[str, tuple[Path, dict[str, str], str]] = {}
    for path in sorted(source.glob("*.c.cm")):
        text = path.read_text()
        # A model file holds one CM section (INFERNAL1/a) followed by its HMM filter (HMMER3/f).
        if not text.startswith("INFERNAL1/a") or text.count("\nINFERNAL1/a") != 0:
            continue
        header = _cm_header(text)
        name = header.get("NAME")
        if not name or name in exclude or name in models or "ECMLC" not in header:
            continue
        models[name] = (path, header, text)
    return models


def _collect_seeds(source: Path) -> dict[str, tuple[str, StockholmAlignment]]:
    """Seed text and alignment keyed by ID (or file stem); single-alignment files take precedence."""
    single: dict[str, tuple[str, StockholmAlignment]] = {}
    multi: dict[str, tuple[str, StockholmAlignment]] = {}
    for path in sorted(source.glob("*.sto")):
        text = path.read_text(encoding="latin-1")
        chunks = [c.strip("\n") + "\n//\n" for c in re.split(r"^//[ \t]*$", text, flags=re.M) if c.strip()]
        try:
            alignments = [read_stockholm(c)[0] for c in chunks]
        except (ValueError, IndexError):
            continue
        target = single if len(alignments) == 1 else multi
        for chunk, ali in zip(chunks, alignments, strict=True):
            key = ali.identifier or (path.stem if len(alignments) == 1 else None)
            if key and key not in target:
                target[key] = (chunk, ali)
    return {**multi, **single}


def _with_accession(text: str, accession: str) -> str:
    """Insert ``ACC`` after ``NAME`` in both the CM and the HMM-filter section when missing."""
    out = []
    lines = text.splitlines(keepends=True)
    for k, line in enumerate(lines):
        out.append(line)
        if line.startswith("NAME ") and not (k + 1 < len(lines) and lines[k + 1].startswith("ACC ")):
            out.append(f"ACC   {accession}\n")
    return "".join(out)


def _with_gf(chunk: str, accession: str, name: str, description: str | None) -> str:
    """Put ``#=GF ID/AC/DE`` right after the Stockholm header, replacing existing ones."""
    lines = [ln for ln in chunk.splitlines() if not re.match(r"#=GF\s+(ID|AC|DE)\s", ln)]
    gf = [f"#=GF ID   {name}", f"#=GF AC   {accession}"]
    if description:
        gf.append(f"#=GF DE   {description}")
    return "\n".join(lines[:1] + gf + lines[1:]) + "\n"


def _scan_cm_headers(cm: Path) -> list[dict[str, str]]:
    headers: list[dict[str, str]] = []
    current: dict[str, str] | None = None
    with open(cm, encoding="latin-1") as fh:
        for line in fh:
            if line.startswith("INFERNAL1/a"):
                current = {}
                headers.append(current)
                continue
            if current is None:
                continue
            tag, _, value = line.partition(" ")
            if tag in ("CM", "HMMER3/f", "//") or not tag.isupper():
                current = None  # header done; skip the rest of this model and its HMM filter
                continue
            current.setdefault(tag, value.strip())
    for h in headers:
        if "ACC" not in h:
            h["ACC"] = derived_accession(h["NAME"])
    return headers


def _scan_seed_ranges(seed: Path) -> dict[str, tuple[int, int]]:
    """Byte (offset, size) of every alignment in ``seed``, keyed by its #=GF AC and #=GF ID."""
    ranges: dict[str, tuple[int, int]] = {}
    start = 0
    keys: list[str] = []
    pos = 0
    with open(seed, "rb") as fh:
        for raw in fh:
            if raw.startswith(b"# STOCKHOLM"):
                start, keys = pos, []
            elif raw.startswith((b"#=GF AC", b"#=GF ID")):
                parts = raw.split()
                if len(parts) >= 3:
                    keys.append(parts[2].decode("latin-1"))
            pos += len(raw)
            if raw.strip() == b"//":
                for k in keys:
                    ranges.setdefault(k, (start, pos - start))
    return ranges
