"""The wwPDB's Saturday pre-release sequence files: reading, checking and classifying their polymers.

Every Saturday from 03:00 UTC the wwPDB publishes, for every entry it will release the following Wednesday,
the sequence of each distinct polymer (``new_release_structure_sequence.tsv``) and the same sequences in
canonical one-letter code (``new_release_structure_sequence_canonical.tsv``); both replace last week's files
at the same address (https://www.wwpdb.org/files/, as PDBj's status page and the D3R CELPP pipeline describe
them).

Format, as far as public sources show it (no recorded copy of the file was found; see
``tests/support/wwpdb/README.md``): tab-separated, one polymer per line, three fields

    PDB_ID <TAB> N <TAB> SEQUENCE

with an optional header line whose first field is ``PDB_ID`` (D3R skips it). ``N`` is a small integer
numbering the entry's distinct polymers; D3R reads it as the polymer's id within the entry and the RCSB's own
pre-release loader numbers the same sequences by entity, so it is read here as the entity id (the blind
track links a target to its released chain by sequence identity first, so a different meaning of ``N``
only weakens the entity cross-check). SEQUENCE follows ``_entity_poly.pdbx_seq_one_letter_code`` in the
plain file (non-standard residues as their chemical-component code in parentheses, deoxynucleotides as
``(DA)``, ``(DC)`` ...) and ``..._code_can`` in the canonical one (each residue as its parent's letter).

A file is either read whole or rejected: a line that is not three valid fields, a last line without its
newline (a cut download), no data line at all, or the two files disagreeing on which polymers exist raise
:class:`PrereleaseFormatError` naming the line, and nothing is used.
"""

from __future__ import annotations

import email.utils
import hashlib
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

import requests

DEFAULT_BASE_URL = "https://www.wwpdb.org/files"
SEQUENCE_FILE = "new_release_structure_sequence.tsv"
CANONICAL_FILE = "new_release_structure_sequence_canonical.tsv"

#: Largest file read (the real ones are well below a megabyte: a few hundred entries a week).
MAX_FILE_BYTES = 32 * 2**20

#: Polymers must be longer than this (SCIENCE.md §3, as the weekly PDB set: "length > 20 nt").
MIN_LENGTH_EXCLUSIVE = 20

_PDB_ID = re.compile(r"^(?:[0-9][A-Z0-9]{3}|PDB_[0-9A-Z]{8})$")
_ENTITY = re.compile(r"^[0-9]{1,6}$")
_TOKEN = re.compile(r"\(([A-Z0-9]{1,5})\)|([A-Z])")
_SEQUENCE = re.compile(r"^(?:\([A-Z0-9]{1,5}\)|[A-Z])+$")
_DEOXY = {"DA", "DC", "DG", "DT", "DU", "DI", "DN"}
_RIBO = frozenset("ACGU")
_NUCLEIC_LETTERS = frozenset("ACGUTIN")

# polymer kinds
RNA = "rna"
DNA = "dna"
HYBRID = "hybrid"
PROTEIN = "protein"


class PrereleaseFormatError(ValueError):
    """A pre-release file that cannot be used as a whole (malformed, partial, inconsistent)."""


class PrereleaseUnavailable(RuntimeError):
    """A file could not be fetched (HTTP error, connection, size cap); ``retryable`` says if it may heal."""

    def __init__(self, message: str, *, retryable: bool = True, status: int | None = None):
        super().__init__(message)
        self.retryable = retryable
        self.status = status


@dataclass(frozen=True)
class Row:
    pdb_id: str
    entity_id: str
    sequence: str
    line: int


@dataclass(frozen=True)
class Polymer:
    """One distinct polymer of an entry to be released.

    ``sequence`` is the plain file's text (with parenthesised codes), ``canonical`` the canonical file's
    letters ('' when the canonical file was not available).
    """

    pdb_id: str
    entity_id: str
    sequence: str
    canonical: str

    @property
    def tokens(self) -> tuple[str, ...]:
        """One item per residue: a letter, or a chemical-component code for a parenthesised residue."""
        return tuple(code or letter for code, letter in _TOKEN.findall(self.sequence))

    @property
    def length(self) -> int:
        return len(self.tokens)

    @property
    def modified(self) -> tuple[tuple[int, str], ...]:
        """(1-based position, code) of each residue written as a parenthesised code (not a deoxy code)."""
        return tuple(
            (k, t) for k, t in enumerate(self.tokens, start=1) if len(t) > 1 and t not in _DEOXY
        )

    @property
    def kind(self) -> str:
        """RNA, DNA, hybrid or protein, from the plain file's codes.

        Deoxynucleotides are written ``(DA)``...; ribonucleotides as A, C, G, U (modified residues of either
        by their code, whose canonical letter is a nucleotide). A polymer whose canonical letters are all
        nucleotide letters is a nucleic acid (a protein of 21+ residues made of Ala, Cys, Gly and Sec only is
        not known in the PDB); deoxy codes make it DNA, or a hybrid when it also has plain letters.
        """
        tokens = self.tokens
        deoxy = sum(1 for t in tokens if t in _DEOXY)
        plain = "".join(t for t in tokens if len(t) == 1)
        if not set(self.canonical or plain) <= _NUCLEIC_LETTERS:
            return PROTEIN
        if deoxy:
            # plain letters are ribonucleotides; a DNA's modified residues are parenthesised like its others
            return HYBRID if plain else DNA
        return RNA


@dataclass(frozen=True)
class PrereleaseFile:
    """A fetched file: its text, digest and the server's Last-Modified (None when not sent)."""

    name: str
    url: str
    text: str
    sha256: str
    last_modified: datetime | None


def parse_rows(text: str, *, name: str = SEQUENCE_FILE, canonical: bool = False) -> list[Row]:
    """The data lines of one file, each checked.

    Raises
    ------
    PrereleaseFormatError
        A line without exactly three tab-separated fields, an invalid PDB id, entity or sequence, a
        repeated (PDB id, entity), a last line without its newline, or no data line at all.
    """
    if "\x00" in text:
        raise PrereleaseFormatError(f"{name}: contains NUL bytes (not a text file)")
    if text and not text.endswith("\n"):
        last = text.count("\n") + 1
        raise PrereleaseFormatError(
            f"{name}: line {last} is not terminated (the file ends mid-line: a partial download or write)"
        )
    rows: list[Row] = []
    seen: dict[tuple[str, str], int] = {}
    for number, raw in enumerate(text.split("\n")[:-1] if text else [], start=1):
        line = raw.rstrip("\r")
        if not line.strip():
            continue
        fields = [f.strip() for f in line.split("\t")]
        if number == 1 and fields[0].upper() == "PDB_ID":
            continue  # the header line
        if len(fields) != 3:
            raise PrereleaseFormatError(
                f"{name}: line {number}: expected 3 tab-separated fields (PDB_ID, entity, sequence), "
                f"found {len(fields)}: {line[:80]!r}"
            )
        pdb_id, entity, sequence = fields[0].upper(), fields[1], "".join(fields[2].split()).upper()
        if not _PDB_ID.match(pdb_id):
            raise PrereleaseFormatError(f"{name}: line {number}: not a PDB id: {fields[0][:20]!r}")
        if not _ENTITY.match(entity):
            raise PrereleaseFormatError(f"{name}: line {number}: entity is not a number: {entity[:20]!r}")
        valid = re.fullmatch(r"[A-Z]+", sequence) if canonical else _SEQUENCE.match(sequence)
        if not sequence or not valid:
            raise PrereleaseFormatError(
                f"{name}: line {number}: {pdb_id} entity {entity}: not a one-letter sequence"
                + (" (letters only)" if canonical else " (letters and (CODE) groups)")
            )
        key = (pdb_id, entity)
        if key in seen:
            raise PrereleaseFormatError(
                f"{name}: line {number}: {pdb_id} entity {entity} repeated (first on line {seen[key]})"
            )
        seen[key] = number
        rows.append(Row(pdb_id, entity, sequence, number))
    if not rows:
        raise PrereleaseFormatError(f"{name}: no sequence lines (empty or partial file)")
    return rows


def merge(plain: list[Row], canonical: list[Row] | None) -> list[Polymer]:
    """Join the plain and the canonical file into polymers.

    Raises
    ------
    PrereleaseFormatError
        The files list different polymers (one of them is from another week, or was cut).
    """
    if canonical is None:
        return [Polymer(r.pdb_id, r.entity_id, r.sequence, "") for r in plain]
    can = {(r.pdb_id, r.entity_id): r for r in canonical}
    keys = {(r.pdb_id, r.entity_id) for r in plain}
    missing, extra = sorted(keys - set(can)), sorted(set(can) - keys)
    if missing or extra:
        first = (missing or extra)[0]
        raise PrereleaseFormatError(
            f"the two files disagree: {len(missing)} polymer(s) only in {SEQUENCE_FILE}, {len(extra)} only "
            f"in {CANONICAL_FILE} (e.g. {first[0]} entity {first[1]}): one of them is from another week "
            "or incomplete"
        )
    return [Polymer(r.pdb_id, r.entity_id, r.sequence, can[(r.pdb_id, r.entity_id)].sequence) for r in plain]


def rna_candidate(polymer: Polymer) -> tuple[str | None, str]:
    """``(sequence, "")`` for a polymer that may become a blind target, else ``(None, reason)``.

    Kept: RNA whose every residue has a standard ribonucleotide parent (A, C, G, U; modified residues count
    as their parent, as in the weekly PDB set), longer than 20 nt. The sequence is the canonical one.
    """
    kind = polymer.kind
    if kind != RNA:
        return None, {PROTEIN: "protein", DNA: "DNA", HYBRID: "RNA/DNA hybrid"}.get(kind, kind)
    if polymer.canonical and len(polymer.canonical) != polymer.length:
        return None, (
            f"canonical sequence has {len(polymer.canonical)} letters for {polymer.length} residues"
        )
    sequence = polymer.canonical or polymer.sequence
    if not polymer.canonical and polymer.modified:
        return None, "modified residues and no canonical file to name their parents"
    odd = sorted(set(sequence) - _RIBO)
    if odd:
        return None, f"non-standard nucleotides ({', '.join(odd)})"
    if len(sequence) <= MIN_LENGTH_EXCLUSIVE:
        return None, f"too short: {len(sequence)} nt (must be > {MIN_LENGTH_EXCLUSIVE})"
    return sequence, ""


def parse_files(plain_text: str, canonical_text: str | None) -> list[Polymer]:
    """Both files' text to polymers (the canonical file may be missing: None)."""
    plain = parse_rows(plain_text, name=SEQUENCE_FILE)
    canonical = None
    if canonical_text is not None:
        canonical = parse_rows(canonical_text, name=CANONICAL_FILE, canonical=True)
    return merge(plain, canonical)


class WwpdbClient:
    """Fetches the pre-release files from ``{base_url}/{name}`` (the wwPDB's, or a local stand-in).

    HTTP 5xx, 429, connection errors, timeouts and bodies shorter than their Content-Length are retried
    ``retries`` times with a short backoff; a 404 is reported at once (not published yet, or gone).
    """

    def __init__(
        self,
        base_url: str = DEFAULT_BASE_URL,
        *,
        timeout: float = 60.0,
        retries: int = 2,
        backoff: float = 2.0,
        session: requests.Session | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.session = session or requests.Session()
        self.session.headers.setdefault("User-Agent", "CompaRNA-blind (+https://github.com/)")
        self._sleep = sleep

    def url(self, name: str) -> str:
        return f"{self.base_url}/{name}"

    def fetch(self, name: str) -> PrereleaseFile:
        """The whole file, checked for completeness against its Content-Length.

        Raises
        ------
        PrereleaseUnavailable
            After the retries, or at once for a 404 (``status``) or a file over the size cap.
        """
        url = self.url(name)
        last = ""
        for attempt in range(self.retries + 1):
            if attempt:
                self._sleep(self.backoff * 2 ** (attempt - 1))
            try:
                body, headers, status = self._get(url)
            except _Retry as exc:
                last = str(exc)
                continue
            if status == 404:
                raise PrereleaseUnavailable(f"{url}: not found (HTTP 404)", status=404)
            if status >= 500 or status == 429:
                last = f"HTTP {status}"
                continue
            if status != 200:
                raise PrereleaseUnavailable(f"{url}: HTTP {status}", retryable=False, status=status)
            try:
                text = body.decode("utf-8-sig")
            except UnicodeDecodeError as exc:
                raise PrereleaseFormatError(
                    f"{name}: not UTF-8 text ({exc.reason} at byte {exc.start})"
                ) from None
            return PrereleaseFile(
                name, url, text, hashlib.sha256(body).hexdigest(), _http_date(headers.get("Last-Modified"))
            )
        raise PrereleaseUnavailable(f"{url}: failed after {self.retries + 1} attempt(s): {last}")

    def _get(self, url: str) -> tuple[bytes, dict, int]:
        try:
            response = self.session.get(url, stream=True, timeout=self.timeout)
        except (requests.ConnectionError, requests.Timeout) as exc:
            raise _Retry(f"{type(exc).__name__}: {exc}") from None
        with response:
            if response.status_code != 200:
                return b"", dict(response.headers), response.status_code
            expected = response.headers.get("Content-Length", "")
            if expected.isascii() and expected.isdigit() and int(expected) > MAX_FILE_BYTES:
                raise PrereleaseUnavailable(
                    f"{url}: {int(expected)} bytes announced, over the {MAX_FILE_BYTES}-byte cap",
                    retryable=False,
                )
            chunks, size = [], 0
            try:
                for chunk in response.iter_content(64 * 1024):
                    size += len(chunk)
                    if size > MAX_FILE_BYTES:
                        raise PrereleaseUnavailable(
                            f"{url}: larger than the {MAX_FILE_BYTES}-byte cap", retryable=False
                        )
                    chunks.append(chunk)
            except requests.RequestException as exc:  # incl. ChunkedEncodingError: closed before the end
                raise _Retry(f"{type(exc).__name__} while reading: {exc}") from None
            body = b"".join(chunks)
            if expected.isascii() and expected.isdigit() and int(expected) != len(body):
                raise _Retry(f"truncated: {len(body)} of {expected} bytes")
            return body, dict(response.headers), 200


class _Retry(Exception):
    """Internal: an attempt that may succeed when repeated."""


def _http_date(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        parsed = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)
