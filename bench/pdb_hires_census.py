"""What the project's own 3D → 2D pipeline makes of the 82 high-resolution structures (issue 38): per mmCIF
file of ``data/pdb_derived/rnabench_3d_mmcif.tar.gz``, its nucleic-acid chains with their length, their
intra-chain pairs in the standard and the extended definition, their pairs with other strands, and the PDB
rules' verdict (kept, or the exclusion); then the totals. The importer reads the archive with the same
reader (:func:`ingest.datasets.pdb_readers.read_mmcif_archive`), so these are the pairs the dataset holds.

    .venv/bin/python bench/pdb_hires_census.py [--archive PATH] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ingest.datasets.pdb_readers import DefinedEntry, read_mmcif_archive  # noqa: E402

ARCHIVE = Path(__file__).resolve().parents[1] / "data" / "pdb_derived" / "rnabench_3d_mmcif.tar.gz"


def census(archive: Path) -> dict:
    files: dict[str, list[dict]] = defaultdict(list)
    errors = []
    start = time.perf_counter()
    for item in read_mmcif_archive(archive):
        if not isinstance(item, DefinedEntry):
            errors.append({"id": item.entry_id, "error": item.message})
            continue
        stem = item.entry_id.split(":")[0]
        files[stem].append({
            "chain": item.entry_id.split(":", 1)[1],
            "length": len(item.sequence),
            "standard": len(item.standard.pairs),
            "extended": len(item.structure.pairs),
            "inter_chain": len(item.provenance.get("inter_chain_pairs") or ()),
            "kept": not item.exclusion,
            "exclusion": item.exclusion,
        })
    seconds = time.perf_counter() - start
    chains = [c for cs in files.values() for c in cs]
    kept = [c for c in chains if c["kept"]]
    return {
        "archive": str(archive),
        "seconds": round(seconds, 1),
        "files": len(files) + len(errors),
        "files_annotated": len(files),
        "unreadable": errors,
        "chains": len(chains),
        "chains_kept": len(kept),
        "files_with_a_kept_chain": sum(any(c["kept"] for c in cs) for cs in files.values()),
        "pairs": {
            d: {"all_chains": sum(c[d] for c in chains), "kept_chains": sum(c[d] for c in kept)}
            for d in ("standard", "extended", "inter_chain")
        },
        "chains_with_intra_chain_pairs": sum(c["extended"] > 0 for c in chains),
        "lengths": sorted(c["length"] for c in chains),
        "per_file": dict(sorted(files.items())),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--archive", type=Path, default=ARCHIVE)
    parser.add_argument("--json", action="store_true", help="print the whole census as JSON")
    args = parser.parse_args()
    result = census(args.archive)
    if args.json:
        print(json.dumps(result, indent=1))
        return
    print(f"{result['files']} files, {result['files_annotated']} annotated in {result['seconds']} s; "
          f"{result['chains']} chains, {result['chains_kept']} kept by the PDB rules "
          f"(in {result['files_with_a_kept_chain']} files)")
    for d, n in result["pairs"].items():
        print(f"  {d:12s} pairs: {n['all_chains']:5d} in all chains, {n['kept_chains']:5d} in kept chains")
    for stem, cs in result["per_file"].items():
        for c in cs:
            mark = "KEPT" if c["kept"] else c["exclusion"][:70]
            print(f"  {stem:14s} {c['chain']:6s} {c['length']:4d} nt  std {c['standard']:3d}  "
                  f"ext {c['extended']:3d}  inter {c['inter_chain']:3d}  {mark}")


if __name__ == "__main__":
    main()
