"""A small Stockholm alignment reader/writer and the WUSS consensus-structure notation.

Stockholm is the alignment format of Rfam seeds and of Infernal's ``cmalign`` (Eddy, "Stockholm format",
https://sonnhammer.sbc.su.se/Stockholm.html; Infernal User's Guide §"WUSS notation"). Only what CompaRNA
needs is kept: sequence rows (interleaved blocks are joined), ``#=GF`` and ``#=GC`` annotation. ``#=GS`` and
``#=GR`` lines (per-sequence annotation, e.g. cmalign's posterior probabilities ``#=GR PP``) are skipped.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

#: Characters that mean "no residue here" in a Stockholm row: gap '-', '.' (gap in an insert column),
#: '_' and '~' (Infernal's missing data in truncated / local-end alignments).
GAP_CHARACTERS = frozenset("-._~")

# WUSS pair brackets (Infernal User's Guide): nested helices may use any of these four bracket types.
_OPEN = {"<": ">", "(": ")", "[": "]", "{": "}"}
_CLOSE = {v: k for k, v in _OPEN.items()}


class StockholmError(ValueError):
    """Malformed Stockholm text or WUSS string."""


@dataclass(frozen=True)
class StockholmAlignment:
    """One multiple alignment.

    Parameters
    ----------
    names : tuple of str
        Sequence names, in file order (unique).
    rows : tuple of str
        Aligned rows, all of the same width, in the order of ``names``.
    gf : dict
        ``#=GF`` file annotation (tag -> text; repeated tags are joined with a space).
    gc : dict
        ``#=GC`` column annotation (tag -> string of the alignment width), e.g. ``SS_cons`` and ``RF``.
    """

    names: tuple[str, ...]
    rows: tuple[str, ...]
    gf: dict[str, str] = field(default_factory=dict, hash=False, compare=False)
    gc: dict[str, str] = field(default_factory=dict, hash=False, compare=False)

    def __post_init__(self) -> None:
        if len(self.names) != len(self.rows):
            raise StockholmError("names and rows differ in number")
        if len(set(self.names)) != len(self.names):
            raise StockholmError("duplicate sequence names")
        widths = {len(r) for r in self.rows} | {len(v) for v in self.gc.values()}
        if len(widths) > 1:
            raise StockholmError(f"rows and #=GC lines have different widths {sorted(widths)}")

    @property
    def width(self) -> int:
        return len(self.rows[0]) if self.rows else 0

    @property
    def accession(self) -> str | None:
        return self.gf.get("AC")

    @property
    def identifier(self) -> str | None:
        return self.gf.get("ID")

    @property
    def ss_cons(self) -> str | None:
        return self.gc.get("SS_cons")

    def row(self, name: str) -> str:
        try:
            return self.rows[self.names.index(name)]
        except ValueError:
            raise KeyError(name) from None

    def ungapped(self, name: str) -> str:
        """The sequence ``name`` without gap characters."""
        return ungap(self.row(name))

    def sequences(self) -> list[tuple[str, str]]:
        """All (name, ungapped sequence) pairs in alignment order."""
        return [(n, ungap(r)) for n, r in zip(self.names, self.rows, strict=True)]


def ungap(row: str) -> str:
    """Remove gap characters (see :data:`GAP_CHARACTERS`) from an aligned row."""
    return "".join(c for c in row if c not in GAP_CHARACTERS)


def residue_columns(row: str) -> list[int]:
    """1-based alignment column of every residue of ``row``: element k-1 is the column of residue k."""
    return [c for c, ch in enumerate(row, start=1) if ch not in GAP_CHARACTERS]


def read_stockholm(text: str) -> list[StockholmAlignment]:
    """Parse every alignment in a Stockholm file.

    Raises
    ------
    StockholmError
        On a missing header or terminator, a sequence line without a row, or rows of unequal width.
    """
    alignments: list[StockholmAlignment] = []
    in_alignment = False
    rows: dict[str, list[str]] = {}
    gf: dict[str, str] = {}
    gc: dict[str, list[str]] = {}
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.rstrip()
        if not line.strip():
            continue
        if line.startswith("# STOCKHOLM"):
            if in_alignment:
                raise StockholmError(f"line {lineno}: new alignment before '//'")
            in_alignment, rows, gf, gc = True, {}, {}, {}
            continue
        if not in_alignment:
            raise StockholmError(f"line {lineno}: text outside an alignment (missing '# STOCKHOLM 1.0')")
        if line.strip() == "//":
            alignments.append(_make(rows, gf, gc, lineno))
            in_alignment = False
            continue
        if line.startswith("#=GF"):
            parts = line.split(None, 2)
            if len(parts) >= 2:
                tag, value = parts[1], parts[2] if len(parts) == 3 else ""
                gf[tag] = f"{gf[tag]} {value}" if tag in gf else value
            continue
        if line.startswith("#=GC"):
            parts = line.split()
            if len(parts) != 3:
                raise StockholmError(f"line {lineno}: malformed #=GC line")
            gc.setdefault(parts[1], []).append(parts[2])
            continue
        if line.startswith("#"):
            continue  # #=GS, #=GR and comments
        parts = line.split()
        if len(parts) != 2:
            raise StockholmError(f"line {lineno}: expected 'name aligned-sequence'")
        rows.setdefault(parts[0], []).append(parts[1])
    if in_alignment:
        raise StockholmError("alignment not terminated by '//'")
    return alignments


def _make(rows: dict[str, list[str]], gf: dict[str, str], gc: dict[str, list[str]], lineno: int):
    try:
        return StockholmAlignment(
            names=tuple(rows),
            rows=tuple("".join(parts) for parts in rows.values()),
            gf=dict(gf),
            gc={k: "".join(v) for k, v in gc.items()},
        )
    except StockholmError as exc:
        raise StockholmError(f"alignment ending at line {lineno}: {exc}") from None


def write_stockholm(alignment: StockholmAlignment) -> str:
    """Single-block (Pfam-style) Stockholm text of ``alignment``."""
    width = max([len(n) for n in alignment.names] + [len(f"#=GC {k}") for k in alignment.gc] + [1])
    out = ["# STOCKHOLM 1.0", ""]
    out += [f"#=GF {k} {v}" for k, v in alignment.gf.items()]
    if alignment.gf:
        out.append("")
    out += [f"{n:<{width}} {r}" for n, r in zip(alignment.names, alignment.rows, strict=True)]
    out += [f"{'#=GC ' + k:<{width}} {v}" for k, v in alignment.gc.items()]
    out.append("//")
    return "\n".join(out) + "\n"


def parse_wuss(ss: str) -> list[tuple[int, int]]:
    """Base pairs (1-based column indices, i < j) of a WUSS or dot-bracket string.

    WUSS (Infernal User's Guide): ``<>``, ``()``, ``[]``, ``{}`` are nested pairs; an upper-case letter
    pairs with the matching lower-case letter (pseudoknots, e.g. ``AAA...aaa``); every other character
    (``.,:_-~`` ...) is unpaired. Plain dot-bracket (RNAalifold output) is a special case.

    Raises
    ------
    StockholmError
        On unbalanced brackets or letters.
    """
    pairs: list[tuple[int, int]] = []
    stacks: dict[str, list[int]] = {}
    for pos, ch in enumerate(ss, start=1):
        if ch in _OPEN or (ch.isalpha() and ch.isupper()):
            stacks.setdefault(ch, []).append(pos)
        elif ch in _CLOSE or (ch.isalpha() and ch.islower()):
            opener = _CLOSE.get(ch, ch.upper())
            if not stacks.get(opener):
                raise StockholmError(f"position {pos}: unmatched closing {ch!r}")
            pairs.append((stacks[opener].pop(), pos))
    for opener, stack in stacks.items():
        if stack:
            raise StockholmError(f"position {stack[-1]}: unmatched opening {opener!r}")
    return sorted(pairs)


def from_rows(named_rows: Iterable[tuple[str, str]], *, gc: dict[str, str] | None = None):
    """Build a :class:`StockholmAlignment` from (name, aligned row) pairs."""
    items = list(named_rows)
    return StockholmAlignment(
        names=tuple(n for n, _ in items), rows=tuple(r for _, r in items), gc=dict(gc or {})
    )


def rename_sequence(text: str, old: str, new: str) -> str:
    """Stockholm text of a single alignment with row ``old`` renamed to ``new``.

    A row already called ``new`` is renamed ``new_seed`` first so names stay unique. Comparative
    predictor specs read the query row under a fixed name, whatever it was called when stored.
    """
    (aln,) = read_stockholm(text)
    if old == new:
        return text
    if old not in aln.names:
        raise ValueError(f"no sequence {old!r} in the alignment")
    names = tuple(new if n == old else (f"{n}_seed" if n == new else n) for n in aln.names)
    return write_stockholm(StockholmAlignment(names=names, rows=aln.rows, gf=aln.gf, gc=aln.gc))
