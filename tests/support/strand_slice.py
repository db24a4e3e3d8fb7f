"""Build a small directory of real RNA STRAND files (read from ../shared/data, written to a temp dir)."""

from __future__ import annotations

import tarfile
from pathlib import Path


def make_strand_slice(
    archive: Path, dest: Path, *, prefixes: dict[str, int], max_length: int = 10**6
) -> list[str]:
    """Copy the first ``n`` entries (by name) of each ID prefix whose length is ≤ ``max_length`` into ``dest``.

    Returns the entry ids written. Length is counted from the BPSEQ body lines.
    """
    dest.mkdir(parents=True, exist_ok=True)
    wanted = dict(prefixes)
    written: list[str] = []
    with tarfile.open(archive, "r:gz") as tar:
        members = sorted((m for m in tar.getmembers() if m.name.endswith(".bpseq")), key=lambda m: m.name)
        for member in members:
            entry_id = Path(member.name).stem
            prefix = entry_id.split("_")[0]
            if wanted.get(prefix, 0) <= 0:
                continue
            data = tar.extractfile(member).read()
            n = sum(1 for line in data.decode(errors="replace").splitlines() if line[:1].isdigit())
            if n > max_length:
                continue
            (dest / f"{entry_id}.bpseq").write_bytes(data)
            written.append(entry_id)
            wanted[prefix] -= 1
    return written
