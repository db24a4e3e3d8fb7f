"""Bounded reading of compressed input: every archive the project reads is decompressed under caps.

A small compressed file can expand enormously (a "gzip bomb": ~1000:1 for zeros). Readers of archives and
gzip files therefore check the sizes a tar header declares before reading a member, count what they have
decompressed, and stop with :class:`TooLarge` (a clear error, recorded like any malformed input) when a
member or the whole archive goes over its cap. Pure module (standard library only).
"""

from __future__ import annotations

import gzip
import tarfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import IO

CHUNK = 1 << 20


class TooLarge(ValueError):
    """Decompressed input larger than its cap."""


def _mb(n: int) -> str:
    return f"{n / 2**20:g} MB"


def read_capped(fh: IO[bytes], cap: int, what: str) -> bytes:
    """All of ``fh``, at most ``cap`` bytes; :class:`TooLarge` if there is more."""
    data = fh.read(cap + 1)
    if len(data) > cap:
        raise TooLarge(f"{what} decompresses to more than {_mb(cap)}")
    return data


@dataclass
class TarBudget:
    """Caps for the members of one tar stream: per member and in total (sizes from the tar headers).

    tarfile reads exactly the size a header declares, so checking it before reading bounds both memory
    (for members read whole) and work.
    """

    member_cap: int
    total_cap: int
    what: str = "archive"
    max_members: int = 1_000_000
    total: int = 0
    members: int = 0

    def admit(self, info: tarfile.TarInfo) -> None:
        """Count ``info`` against the caps; :class:`TooLarge` when it breaks one."""
        self.members += 1
        if self.members > self.max_members:
            raise TooLarge(f"{self.what} holds more than {self.max_members} members")
        if info.size > self.member_cap:
            raise TooLarge(
                f"{self.what}: member {info.name} is {_mb(info.size)} uncompressed, over the "
                f"{_mb(self.member_cap)} limit per member"
            )
        self.total += info.size
        if self.total > self.total_cap:
            raise TooLarge(f"{self.what} decompresses to more than {_mb(self.total_cap)} in total")


def gunzip_capped(path: str | Path, cap: int) -> bytes:
    """The decompressed content of a gzip file, at most ``cap`` bytes (:class:`TooLarge` beyond)."""
    with gzip.open(path, "rb") as fh:
        return read_capped(fh, cap, str(path))


class CappedInflater:
    """Incremental gzip decompression that never holds more than ``chunk`` bytes of output at once and
    stops at ``cap`` bytes in total (multi-member gzip included)."""

    def __init__(self, cap: int, what: str, chunk: int = CHUNK):
        self.cap, self.what, self.chunk = cap, what, chunk
        self.size = 0
        self._z = zlib.decompressobj(wbits=31)  # 31: gzip wrapper, checks CRC-32 and ISIZE

    @property
    def eof(self) -> bool:
        return self._z.eof

    def feed(self, data: bytes) -> int:
        """Decompress ``data``; returns the bytes produced (discarded). Raises zlib.error or TooLarge."""
        produced = 0
        while data:
            out = self._z.decompress(data, self.chunk)
            produced += len(out)
            self.size += len(out)
            if self.size > self.cap:
                raise TooLarge(f"{self.what} decompresses to more than {_mb(self.cap)}")
            if self._z.unconsumed_tail:
                data = self._z.unconsumed_tail
            elif self._z.eof and self._z.unused_data:
                data = self._z.unused_data  # next gzip member
                self._z = zlib.decompressobj(wbits=31)
            else:
                data = b""
        return produced
