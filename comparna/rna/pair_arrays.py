"""Pairs of many structures in flat numpy arrays, from :class:`Structure` objects or stored canonical texts.

The input side of :mod:`comparna.rna.metrics_batch`. Texts (``"i-j i-j ..."``, :mod:`comparna.rna.canonical`)
are checked and parsed for a whole batch at once by a few numpy passes over their bytes, with the same
acceptance rules as :func:`comparna.rna.canonical.structure_from_text`.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from comparna.rna.structure import Structure, StructureFormatError

__all__ = ["PairArrays", "group_sums", "pairs_of_structures", "pairs_of_texts"]


@dataclass(frozen=True)
class PairArrays:
    """The pairs of several structures in flat arrays.

    Attributes
    ----------
    lengths : numpy.ndarray
        int64 sequence length of each structure.
    owner, i, j : numpy.ndarray
        int64, for every pair: the index of its structure and its 1-based ends, i < j, sorted by owner.
    offsets : numpy.ndarray
        int64, structure s has the pairs ``offsets[s] : offsets[s + 1]`` (built by :meth:`build`).
    """

    lengths: np.ndarray
    owner: np.ndarray
    i: np.ndarray
    j: np.ndarray
    offsets: np.ndarray

    @classmethod
    def build(cls, lengths: np.ndarray, owner: np.ndarray, i: np.ndarray, j: np.ndarray) -> PairArrays:
        """Arrays with their offsets; ``owner`` must be sorted."""
        offsets = np.searchsorted(owner, np.arange(lengths.size + 1, dtype=np.int64))
        return cls(lengths, owner, i, j, offsets.astype(np.int64))

    @property
    def size(self) -> int:
        return int(self.lengths.size)

    def sizes(self) -> np.ndarray:
        """Number of pairs of each structure."""
        return np.diff(self.offsets)

    def take(self, index: np.ndarray) -> PairArrays:
        """The structures ``index`` (in that order), renumbered 0 .. len(index) − 1."""
        sizes = self.sizes()[index]
        total = int(sizes.sum())
        offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        rows = np.arange(total, dtype=np.int64) + np.repeat(self.offsets[index] - offsets[:-1], sizes)
        owner = np.repeat(np.arange(index.size, dtype=np.int64), sizes)
        return PairArrays(self.lengths[index], owner, self.i[rows], self.j[rows], offsets)

    def per_structure(self, mask: np.ndarray) -> np.ndarray:
        """How many pairs of each structure have ``mask`` set (one bool per pair)."""
        return group_sums(mask, self.offsets)


def group_sums(mask: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Sums of a bool array over consecutive groups ``offsets[g] : offsets[g + 1]``.

    ``np.add.reduceat`` is an order of magnitude faster than ``bincount`` of the selected owners, but gives
    the first element instead of 0 for an empty group, and needs valid start indices: a zero is appended
    and empty groups are zeroed.
    """
    values = np.concatenate([mask, [False]]).view(np.int8)
    sums = np.add.reduceat(values, offsets[:-1], dtype=np.int64)
    sums[offsets[1:] == offsets[:-1]] = 0
    return sums


def pairs_of_structures(structures: Sequence[Structure]) -> PairArrays:
    """Encode structures (their pairs are already validated: 1 <= i < j <= L, no duplicates)."""
    sizes = np.fromiter((len(s.pairs) for s in structures), dtype=np.int64, count=len(structures))
    flat = np.fromiter(
        itertools.chain.from_iterable(itertools.chain.from_iterable(s.pairs for s in structures)),
        dtype=np.int64,
        count=2 * int(sizes.sum()),
    ).reshape(-1, 2)
    lengths = np.fromiter((s.length for s in structures), dtype=np.int64, count=len(structures))
    owner = np.repeat(np.arange(len(structures), dtype=np.int64), sizes)
    return PairArrays.build(lengths, owner, flat[:, 0].copy(), flat[:, 1].copy())


def pairs_of_texts(lengths: Sequence[int], texts: Sequence[str]) -> PairArrays:
    """Parse stored canonical texts (``"i-j i-j ..."``) into arrays, validating them as
    :func:`comparna.rna.canonical.structure_from_text` does.

    Raises
    ------
    StructureFormatError
        A token that is not ``i-j`` with digits, a pair outside 1 <= i < j <= L or a base paired with
        itself; the message names the structure (0-based index in ``texts``). As there, pairs given as
        ``j-i`` are turned round and a pair given twice counts once.
    """
    lengths_a = np.asarray(lengths, dtype=np.int64)
    if lengths_a.size != len(texts):
        raise ValueError("one length per text")
    sizes = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    # one vectorised parse of the whole batch: canonical texts (empty ones left out of the join) by the short
    # path, anything else by the general one; the search for the offending token runs only on bad input
    kept = np.flatnonzero(sizes) if sizes.size and not sizes.all() else None
    joined = " ".join(texts if kept is None else [texts[k] for k in kept.tolist()])
    parsed = _parse_canonical(joined)
    if parsed is None:
        kept, joined = None, " ".join(texts)
        parsed = _parse_pair_tokens(joined)
    if parsed is None:
        n, bad = next(
            (n, tok) for n, text in enumerate(texts) for tok in text.split() if not _TOKEN.fullmatch(tok)
        )
        raise StructureFormatError(f"structure {n}: pair token {bad!r} is not 'i-j'")
    pairs, where = parsed
    # text n occupies characters [end(n−1) + 1, end(n)) of the joined string
    text_ends = np.cumsum((sizes if kept is None else sizes[kept]) + 1)
    # pairs start in increasing order: text n holds those between the ends of texts n−1 and n
    per_text = np.diff(np.searchsorted(where, text_ends), prepend=0)
    owner = np.repeat(np.arange(len(texts), dtype=np.int64) if kept is None else kept, per_text)
    first, second = pairs[:, 0], pairs[:, 1]
    i, j = np.minimum(first, second, dtype=np.int64), np.maximum(first, second, dtype=np.int64)
    bad = (i == j) | (i < 1) | (j > lengths_a[owner])
    if bad.any():
        k = int(np.argmax(bad))
        raise StructureFormatError(
            f"structure {int(owner[k])}: pair ({int(pairs[k, 0])}, {int(pairs[k, 1])}) is not "
            f"1 <= i < j <= {int(lengths_a[owner[k]])}"
        )
    width = int(lengths_a.max()) + 2 if lengths_a.size else 2
    key = (owner * width + i) * width + j
    if key.size > 1 and not (key[1:] > key[:-1]).all():
        # not canonical (unsorted or repeated pairs): sort, and keep a repeated pair once, as a set would
        key, first = np.unique(key, return_index=True)
        owner, i, j = owner[first], i[first], j[first]
    return PairArrays.build(lengths_a, owner, i, j)


_TOKEN = re.compile(r"[0-9]+-[0-9]+")
_SPACE = np.zeros(256, dtype=bool)
_SPACE[[9, 10, 11, 12, 13, 28, 29, 30, 31, 32]] = True  # ASCII whitespace of str.split()


def _parse_canonical(text: str) -> tuple[np.ndarray, np.ndarray] | None:
    """As :func:`_parse_pair_tokens` for text in the stored form only — ``i-j`` tokens of at most 9 digits
    each, one space between tokens, nothing before or after — and None for any other text (which the
    general parser then reads: it accepts everything this one does, with the same result).

    The separators are then exactly the bytes below ``'0'``, alternately ``-`` and a space: one comparison
    pass over the bytes finds them all, and the numbers lie between them.
    """
    try:
        raw = np.frombuffer(text.encode("ascii"), dtype=np.uint8)
    except UnicodeEncodeError:
        return None
    if raw.size == 0 or raw.max() > 57 or raw.size >= 2**31:  # a byte above '9'; int32 offsets
        return None
    sep = np.flatnonzero(raw < 48).astype(np.int32)  # bytes below '0'
    if sep.size % 2 == 0:
        return None
    # number n ends (exclusive) at the n-th separator, or at the end of the text; int32 throughout: the
    # arrays per number are the ones that leave the cache first on a loaded machine
    last = np.empty(sep.size + 1, dtype=np.int32)
    last[:-1] = sep
    last[-1] = raw.size
    width = np.empty_like(last)
    width[0] = last[0]
    np.subtract(last[1:], last[:-1], out=width[1:])
    width[1:] -= 1
    last -= 1  # the last digit of each number
    longest = int(width.max())
    if width.min() < 1 or longest > 9:
        return None
    # take(), not raw[...]: indexing with int32 indices first converts them to intp (twice the time)
    if not ((raw.take(sep[0::2]) == 45).all() and (raw.take(sep[1::2]) == 32).all()):
        return None
    # digits from the last one back; a number shorter than k digits gets '0' (48) in place k, so every
    # number collects exactly 48 · (1 + 10 + ... + 10**(longest−1)) too many, taken off at the end
    kind = np.int32 if longest <= 8 else np.int64  # 57 · 111 111 111 would overflow int32
    value = raw.take(last).astype(kind)
    at = last.copy()
    scale = 1
    for k in range(1, longest):
        scale *= 10
        at -= 1
        value += np.where(width > k, raw.take(at), np.uint8(48)) * kind(scale)
    value -= kind(48 * ((10**longest - 1) // 9))
    return value.reshape(-1, 2), (last - width + 1)[0::2]


def _parse_pair_tokens(text: str) -> tuple[np.ndarray, np.ndarray] | None:
    """The numbers of ``text`` as (n, 2) int64 pairs, with the character offset of each pair, when every
    whitespace-separated token is ``digits-digits``; else None.

    Works on the bytes with numpy (a few C-level passes): the digit runs, in order, must be separated
    alternately by exactly one dash (inside a token) and by whitespace (between tokens), with no other dash
    anywhere; the runs' values are accumulated digit by digit from their last digit, all runs at once.
    """
    try:
        raw = np.frombuffer(text.encode("ascii"), dtype=np.uint8)
    except UnicodeEncodeError:
        return None
    digit = (raw >= 48) & (raw <= 57)
    dash = raw == 45
    low = raw <= 32
    if not (digit | dash | low).all():
        return None
    # plain spaces (the canonical text) need no look-up of the other whitespace characters
    if np.count_nonzero(raw == 32) != np.count_nonzero(low) and not _SPACE[raw[low]].all():
        return None
    # digit runs [start, end): the digit flag changes at their edges (a run may touch either end)
    change = np.flatnonzero(digit[1:] != digit[:-1]) + 1
    edges = np.concatenate([[0] if raw.size and digit[0] else [], change, [raw.size] if raw.size and digit[-1]
                            else []]).astype(np.int64)
    starts, ends = edges[0::2], edges[1::2]
    dashes = np.count_nonzero(dash)
    if starts.size != 2 * dashes:
        return None
    if dashes == 0:
        return np.zeros((0, 2), dtype=np.int64), np.zeros(0, dtype=np.int64)
    # the gap after an even run is exactly one dash; with as many dashes as pairs, no dash is left for the
    # other gaps (whitespace only)
    if not ((starts[1::2] - ends[0::2] == 1).all() and dash[ends[0::2]].all()):
        return None
    width = ends - starts
    longest = int(width.max())
    if longest > 18:  # beyond int64; no sequence is that long
        return None
    kind = np.int32 if longest <= 9 else np.int64
    digits = raw - np.uint8(48)  # wraps round for non-digits, which the masks below never use
    last = ends - 1
    value = digits[last].astype(kind)
    scale = 1
    for k in range(1, longest):
        scale *= 10
        value += np.where(width > k, digits[last - k], 0).astype(kind) * kind(scale)
    return value.astype(np.int64).reshape(-1, 2), starts[0::2]
