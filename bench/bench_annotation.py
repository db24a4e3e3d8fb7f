"""Annotation: seconds per PDB entry for download + chain extraction + base-pair annotation.

The real mmCIF entries shipped with the repository (``tests/data/mmcif.tar.gz``, unpacked into a temporary
folder; ``--data DIR`` reads another folder of the same file names) are served gzipped by the loopback RCSB of
``tests/support/local_rcsb.py``. Per entry, the fastest of ``--repeat`` runs counts:

- system:   :func:`ingest.pdb.pipeline.fetch_and_annotate` (verified atomic download, gemmi extraction of
  chains, RNApolis annotation of every model, consensus over models, per-chain standard/extended pairs);
- baseline: the naive way: plain download, decompress, then RNApolis's own command-line ``annotator`` as a
  subprocess per entry (interpreter start-up and imports every time);
- limit:    what cannot be avoided: the same bytes fetched over loopback, gemmi's parse of the file, and
  RNApolis ``find_pairs`` on each model (on structures prepared by RNApolis's parser beforehand, untimed).

The one-off import of RNApolis (pandas, scipy) is measured apart and charged to no entry. The annotate-stage
comparison puts the system's extract + annotate beside gemmi parse + ``find_pairs``.
"""

from __future__ import annotations

import gzip
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import Bench, best_of  # noqa: E402
from ingest.pdb import pipeline  # noqa: E402
from ingest.pdb.rcsb import RcsbClient  # noqa: E402
from tests.support.fixture_data import extract_mmcif  # noqa: E402
from tests.support.local_rcsb import LocalRcsb, fixture_entries  # noqa: E402

ANNOTATOR = Path(sys.executable).parent / "annotator"


def fetch(url: str) -> bytes:
    response = requests.get(url, timeout=60)
    response.raise_for_status()
    return response.content


def main(argv: list[str] | None = None) -> int:
    bench = Bench("annotation", __doc__, smoke={"entries": 3, "repeat": 1, "baseline_entries": 1})
    p = bench.parser
    p.add_argument("--data", type=Path, default=None,
                   help="folder of the mmCIF files (default: the shipped tests/data/mmcif.tar.gz, unpacked)")
    p.add_argument("--entries", type=int, default=0, help="only the first N entries (default: all)")
    p.add_argument("--repeat", type=int, default=3, help="runs per entry; the fastest counts (3)")
    p.add_argument("--baseline-entries", type=int, default=0,
                   help="entries the naive baseline runs on, the rest scaled (default: all)")
    args = bench.parse(argv)
    if args.entries < 0 or args.repeat < 1 or args.baseline_entries < 0:
        p.error("--entries and --baseline-entries must be >= 0, --repeat >= 1")
    if args.data is not None and not args.data.is_dir():
        p.error(f"no mmCIF folder at {args.data}")

    with bench.measuring(), tempfile.TemporaryDirectory(prefix="comparna-bench-annot-") as tmp:
        start = time.perf_counter()
        import gemmi
        from rnapolis import annotator, parser

        bench.details["rnapolis_import_s"] = time.perf_counter() - start
        data = args.data if args.data is not None else extract_mmcif(Path(tmp) / "fixtures")
        entries = fixture_entries(data)
        if args.entries:
            entries = entries[: args.entries]
        n_base = len(entries) if not args.baseline_entries else min(args.baseline_entries, len(entries))
        rows, failures = [], []
        with LocalRcsb(entries) as server:
            client = RcsbClient(server.search_url, server.download_url, timeout=30, retries=0)
            for k, entry in enumerate(entries):
                url = f"{server.download_url}/{entry.pdb_id}.cif.gz"
                run = iter(range(10**6))

                def system(entry=entry, run=run):
                    return pipeline.fetch_and_annotate(client, entry.pdb_id, Path(tmp) / f"s{next(run)}")

                t_sys, outcome = best_of(system, args.repeat)
                if outcome.status != pipeline.OK:
                    failures.append(f"{entry.pdb_id}: {outcome.status} {outcome.reason}")
                    continue
                # limit: fetch + parse, then find_pairs on structures RNApolis parsed beforehand
                cif = Path(tmp) / f"{entry.pdb_id}.cif"

                def fetch_parse(url=url, cif=cif):
                    data = fetch(url)
                    cif.write_bytes(gzip.decompress(data))
                    return gemmi.read_structure(str(cif))

                t_read, structure = best_of(fetch_parse, args.repeat)
                models = len(structure)
                with open(cif) as fh:
                    s3 = parser.read_3d_structure(fh, None, nucleic_acid_only=True)
                every_model = range(1, models + 1)
                t_pairs, found = best_of(
                    lambda s3=s3, ms=every_model: sum(len(annotator.find_pairs(s3, m)[0]) for m in ms),
                    args.repeat)
                row = {
                    "entry": entry.pdb_id, "models": models,
                    "nucleotides": sum(c.length for c in outcome.annotation.chains),
                    "system_s": t_sys, **{f"system_{k}_s": v for k, v in outcome.seconds.items()},
                    "limit_fetch_parse_s": t_read, "limit_find_pairs_s": t_pairs,
                    "pairs_system": len(outcome.annotation.pairs.pairs), "pairs_find_pairs_all_models": found,
                }
                if k < n_base:  # baseline: download, decompress, RNApolis CLI in a subprocess
                    def naive(url=url, cif=cif):
                        cif.write_bytes(gzip.decompress(fetch(url)))
                        return subprocess.run([str(ANNOTATOR), str(cif), "-j", str(cif) + ".json"],
                                              capture_output=True, text=True, timeout=600)

                    t_base, proc = best_of(naive, 1)
                    row["baseline_s"] = t_base
                    if proc.returncode != 0:
                        failures.append(f"{entry.pdb_id}: annotator CLI exit {proc.returncode}: "
                                        f"{proc.stderr[-300:]}")
                rows.append(row)

        bench.check("every entry annotated by the system", not failures and len(rows) == len(entries))
        bench.notes.extend(failures)
        n = len(rows)
        mean = lambda key: statistics.fmean(r[key] for r in rows)  # noqa: E731
        base_rows = [r for r in rows if "baseline_s" in r]
        baseline_mean = statistics.fmean(r["baseline_s"] for r in base_rows) if base_rows else None
        scaled = "" if len(base_rows) == n else f" ({len(base_rows)} of {n} entries)"
        bench.compare(
            f"{n} PDB entries, whole pipeline",
            unit="s per entry (mean)",
            system=(mean("system_s"), "fetch_and_annotate: download + extract + annotate"),
            baseline=(baseline_mean, "download + RNApolis annotator CLI subprocess" + scaled)
            if baseline_mean is not None else None,
            limit=(mean("limit_fetch_parse_s") + mean("limit_find_pairs_s"),
                   "loopback fetch + gemmi parse + RNApolis find_pairs per model"),
        )
        bench.compare(
            f"{n} PDB entries, extract + annotate",
            unit="s per entry (mean)",
            system=(mean("system_extract_s") + mean("system_annotate_s"), "extract + annotate stages"),
            limit=(mean("limit_find_pairs_s"), "RNApolis find_pairs per model alone"),
        )
        worst = max(rows, key=lambda r: r["system_s"]) if rows else None
        bench.details.update({"entries": rows, "worst_entry": worst and worst["entry"]})
    return bench.finish()


if __name__ == "__main__":
    raise SystemExit(main())
