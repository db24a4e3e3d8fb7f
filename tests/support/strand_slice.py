"""Build a small directory of real RNA STRAND files (read from the archive in data/, written to a temp dir).
"""

from __future__ import annotations

import tarfile
from pathlib import Path


def make_strand_slice(
    archive: Path, dest: Path, *, prefixes: dict[str, int], max_length: int = 10**6, acgu_only: bool = False
) -> list[str]:
    """Copy the first ``n`` entries (by name) of each ID prefix, length ≤ ``max_length``, into ``dest``.

    Returns the entry ids written. Length is counted from the BPSEQ body lines; ``acgu_only`` keeps only
    entries whose sequence (uppercased, T→U) is A/C/G/U, i.e. that pass the import filter.
    """
    dest.mkdir(parents=True, exist_ok=True)
    candidates: dict[str, bytes] = {}
    with tarfile.open(archive, "r:gz") as tar:
        # One streaming pass: random access into a gzip stream would decompress it again for each member.
        for member in tar:
            if not member.name.endswith(".bpseq") or "/." in member.name:
                continue
            entry_id = Path(member.name).stem
            if entry_id.split("_")[0] in prefixes:
                candidates[entry_id] = tar.extractfile(member).read()
    wanted = dict(prefixes)
    written: list[str] = []
    for entry_id in sorted(candidates):
        prefix = entry_id.split("_")[0]
        if wanted[prefix] <= 0:
            continue
        data = candidates[entry_id]
        body = [line.split() for line in data.decode(errors="replace").splitlines() if line[:1].isdigit()]
        if len(body) > max_length:
            continue
        if acgu_only and not all(len(f) > 1 and f[1].upper().replace("T", "U") in "ACGU" for f in body):
            continue
        (dest / f"{entry_id}.bpseq").write_bytes(data)
        written.append(entry_id)
        wanted[prefix] -= 1
    return written
