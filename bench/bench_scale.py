"""Scale: every public page, API list, nightly job and the queue at years of data (issue 28).

Starts PostgreSQL and Redis on loopback, migrates, and writes a synthetic database with COPY
(``bench/scale_data.py``): ``--methods`` methods (20 with an older version too) × ``--targets`` targets over
three static datasets and a PDB dataset of 520 weekly batches, about ``methods × targets`` predictions with
realistic outcome shares and a score per ok prediction and definition, 30 subsets. Then, inside Django with
the Redis page cache (as deployed):

- the nightly ranking of every subset × definition (stored: the pages read them), the unseen rankings and
  the tallies the pages read (``comparna.tallies``), each in a child process: wall time and peak memory
  (the child's ``ru_maxrss``);
- every public page and API list endpoint through Django's test client, ``--repeats`` times cold (the
  whole cache cleared before each request) and warm (cache kept): p50/p95, and the largest page's bytes;
- the progress/ETA the pages show: read from the tallies (system) against the same computation from the
  predictions table (baseline, what every page did per 30 s before issue 28);
- building the largest dataset's snapshot in a child process (wall, peak memory, bytes) and verifying it;
- queueing a new method on every target; the database's size on disk.

Comparisons: system = CompaRNA's cost; baseline = the naive way where one exists (progress from the
predictions table); limit = the fastest this stack answers (a warm cache hit) for pages, and for the
background jobs the issue's budget (their ratio is the share of the budget used).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import Bench  # noqa: E402
from bench.scale_pages import measure_computed_comparison, measure_pages, urls  # noqa: E402
from tests.e2e.stack import PYTHON, REPO, Stack, production_stack, redis_server  # noqa: E402

#: The issue's budgets (done-when): seconds, megabytes.
BUDGET = {
    "page_cold": 0.5,
    "page_warm": 0.05,
    "api": 0.5,
    "ranking": 900.0,
    "ranking_mb": 2048.0,
    "snapshot": 600.0,
    "snapshot_mb": 1024.0,
    "queue": 60.0,
}


def in_process(code: str, env: dict) -> tuple[float, float, str]:
    """:func:`child`'s figures for ``code`` run in this process (the smoke run: no interpreter start-ups);
    the peak is this process's so far."""
    import contextlib
    import io
    import resource

    out = io.StringIO()
    start = time.perf_counter()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "<job>", "exec"), {})  # noqa: S102 - the bench's own fixed snippets
    wall = time.perf_counter() - start
    return wall, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, out.getvalue()


def child(code: str, env: dict) -> tuple[float, float, str]:
    """Run ``code`` in a fresh Django process; returns (wall s, the child's peak resident MB, stdout)."""
    prelude = "import django; django.setup()\n"
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        proc = subprocess.Popen([PYTHON, "-c", prelude + code], cwd=REPO, env=env, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if proc.returncode != 0:
            raise RuntimeError(f"child failed ({proc.returncode}):\n{err.read()[-4000:]}")
        return wall, usage.ru_maxrss / 1024.0, out.read()


@contextlib.contextmanager
def _stack(database_url: str | None, extra_env: dict, workdir: Path):
    """The production stack (fresh PostgreSQL + Redis), or Redis beside an existing database."""
    if not database_url:
        with production_stack(extra_env=extra_env) as stack:
            yield stack
        return
    with redis_server() as (redis_port, _):
        env = {
            **os.environ,
            "DATABASE_URL": database_url,
            "CELERY_BROKER_URL": f"redis://127.0.0.1:{redis_port}/0",
            "COMPARNA_DATA_DIR": str(workdir / "data"),
            "DJANGO_SETTINGS_MODULE": "comparna.settings",
            **extra_env,
        }
        yield Stack(env=env, workdir=workdir, redis_port=redis_port)


def existing_rows() -> dict:
    """The row counts of an already built database (as ``build_scale_data`` returns them)."""
    from comparna.models import Score, Subset, Target
    from predictors.models import MethodVersion, Prediction

    return {
        "targets": Target.objects.count(),
        "predictions": Prediction.objects.count(),
        "scores": Score.objects.count(),
        "versions": MethodVersion.objects.count(),
        "subsets": Subset.objects.count(),
    }


def pages_only(bench: Bench, args) -> int:
    """Cold and warm p50/p95 of the pages of an already built database (``--pages-only``), as the full run
    measures them (Redis page cache), and nothing else."""
    with bench.measuring(), tempfile.TemporaryDirectory(prefix="comparna-bench-pages-") as tmp:
        with _stack(args.database_url, {"COMPARNA_LOG_LEVEL": "WARNING"}, Path(tmp)) as stack:
            os.environ.update({**stack.env, "COMPARNA_CACHE_URL": f"redis://127.0.0.1:{stack.redis_port}/1"})
            import django

            django.setup()
            paths = urls()
            wanted = [n.strip() for n in (args.pages or "").split(",") if n.strip()]
            unknown = set(wanted) - set(paths)
            if unknown:
                raise SystemExit(f"unknown pages {sorted(unknown)}; known: {sorted(paths)}")
            pages, _ = measure_pages({n: paths[n] for n in wanted} if wanted else paths, args.repeats)
        for name, row in pages.items():
            bench.compare(name, unit="s per request",
                          system=(row["cold_p95_s"], f"cold p95 (p50 {row['cold_p50_s']:.3f}) {row['path']}"),
                          limit=(row["warm_p95_s"], "warm p95 (a page-cache hit)"))
        bench.details["pages_detail"] = pages
        bench.details["meets"] = {
            "pages cold p95 <= 0.5 s": all(v["cold_p95_s"] <= BUDGET["page_cold"] for v in pages.values()),
            "pages warm p95 <= 0.05 s": all(v["warm_p95_s"] <= BUDGET["page_warm"] for v in pages.values()),
        }
    return bench.finish()


def rankings_only(bench: Bench, args) -> int:
    """The nightly rankings of an already built database from scratch (``--rankings-only``): every stored
    ranking snapshot is deleted, then ``recompute_rankings`` runs in a child process (wall time and its peak
    resident memory against the budget), and the share of pairs decided per subset is reported."""
    with bench.measuring(), tempfile.TemporaryDirectory(prefix="comparna-bench-rankings-") as tmp:
        with _stack(args.database_url, {"COMPARNA_LOG_LEVEL": "WARNING"}, Path(tmp)) as stack:
            os.environ.update(stack.env)
            import django

            django.setup()
            from django.db import connection

            from comparna.models import RankingSnapshot

            deleted = RankingSnapshot.objects.all().delete()[0]
            connection.close()
            load_before = os.getloadavg()
            wall, peak, _ = child(
                "from comparna.services.rankings import recompute_rankings; recompute_rankings()", stack.env
            )
            load_after = os.getloadavg()
            decisions = {
                f"{s.dataset.slug}/{s.subset.slug}/{s.definition}": (s.report.get("decisions") or {})
                for s in RankingSnapshot.objects.select_related("dataset", "subset")
            }
        bench.compare("nightly rankings from scratch", unit="s",
                      system=(wall, f"{len(decisions)} subset x definition rankings (child process)"),
                      limit=(BUDGET["ranking"], "the issue's budget"))
        bench.compare("nightly rankings, peak memory", unit="MB",
                      system=(peak, "the child's peak resident memory"),
                      limit=(BUDGET["ranking_mb"], "the issue's budget"))
        bench.details.update(
            ranking_s=wall, ranking_peak_mb=peak, snapshots_deleted=deleted, rows=existing_rows(),
            load_before=load_before, load_after=load_after,
            decisions={k: {f: v.get(f) for f in ("pairs", "share_won", "share_equal", "share_unknown",
                                                  "reasons")} for k, v in decisions.items()},
            meets={"rankings <= 15 min, <= 2 GB": wall <= BUDGET["ranking"] and peak <= BUDGET["ranking_mb"]},
        )
    return bench.finish()


def main(argv: list[str] | None = None) -> int:
    bench = Bench("scale", __doc__, smoke={"methods": 3, "targets": 60, "repeats": 1})
    p = bench.parser
    p.add_argument("--methods", type=int, default=100, help="methods (100; 20 of them with 2 versions)")
    p.add_argument("--targets", type=int, default=20000, help="targets over the four datasets (20000)")
    p.add_argument("--repeats", type=int, default=5, help="requests per page, cold and warm each (5)")
    p.add_argument(
        "--database-url",
        help="measure on an already built database (bench/scale_db.py) instead of building one; the queueing "
        "step adds a method to it",
    )
    p.add_argument("--pages-only", action="store_true",
                   help="with --database-url: measure the pages only (no background job, no queueing: the "
                   "database is read, never written)")
    p.add_argument("--pages", help="with --pages-only: the names of urls() to measure, comma-separated")
    p.add_argument("--rankings-only", action="store_true",
                   help="with --database-url: delete every ranking snapshot and time the nightly rankings "
                   "from scratch (child process: wall time and peak memory), nothing else")
    args = bench.parse(argv)
    if args.methods < 2 or args.targets < 40 or args.repeats < 1:
        p.error("--methods must be >= 2, --targets >= 40, --repeats >= 1")
    if args.rankings_only:
        if not args.database_url:
            p.error("--rankings-only needs --database-url")
        return rankings_only(bench, args)
    if args.pages_only:
        if not args.database_url:
            p.error("--pages-only needs --database-url")
        return pages_only(bench, args)

    with bench.measuring(), tempfile.TemporaryDirectory(prefix="comparna-bench-scale-") as tmp:
        extra = {"COMPARNA_LOG_LEVEL": "WARNING", "COMPARNA_SNAPSHOT_DIR": str(Path(tmp) / "snapshots")}
        with _stack(args.database_url, extra, Path(tmp)) as stack:
            env = {**stack.env, "COMPARNA_CACHE_URL": f"redis://127.0.0.1:{stack.redis_port}/1"}
            os.environ.update(env)
            import django

            django.setup()
            from django.db import connection

            from bench.scale_data import build_scale_data
            from comparna.models import Dataset, RankingSnapshot
            from comparna.snapshots.archive import verify_archive
            from comparna.snapshots.lifecycle import snapshot_path
            from comparna.snapshots.models import DatasetSnapshot

            figures: dict = {}
            t = time.perf_counter()
            if args.database_url:
                rows = existing_rows()
            else:
                rows = build_scale_data(
                    methods=args.methods,
                    targets=args.targets,
                    progress=lambda d, n: print(f"versions {d}/{n}", file=sys.stderr),
                )
            figures["build_s"] = time.perf_counter() - t
            figures["rows"] = rows
            print(f"built {rows} in {figures['build_s']:.0f} s", file=sys.stderr)
            connection.close()  # the children write; this process reads afresh
            # the smoke run: seconds matter more than peak memory (no interpreter start-ups)
            run = in_process if args.smoke else child

            figures["ranking_s"], figures["ranking_peak_mb"], _ = run(
                "from comparna.services.rankings import recompute_rankings; recompute_rankings()", env
            )
            figures["rankings_stored"] = RankingSnapshot.objects.count()
            figures["unseen_s"], figures["unseen_peak_mb"], _ = run(
                "from comparna.services.leakage import recompute_unseen; recompute_unseen()", env
            )
            try:
                figures["tallies_s"], figures["tallies_peak_mb"], _ = run(
                    "from comparna.services.tallies import refresh_tallies\n"
                    "from comparna.services.pages.rankings import store_ranking_rows\n"
                    "from comparna.services.pages.methods import store_method_standings\n"
                    "refresh_tallies(); store_ranking_rows(); store_method_standings()",
                    env,
                )
                figures["families_refresh_s"], figures["families_refresh_peak_mb"], _ = run(
                    "from comparna.services.pages.families import refresh_family_summaries\n"
                    "refresh_family_summaries()\n"
                    "try:\n"
                    "    from comparna.services.summaries import refresh_unranked_summaries\n"
                    "except ImportError:\n"
                    "    pass\n"
                    "else:\n"
                    "    refresh_unranked_summaries()",
                    env,
                )
                # the method page's figures (background work since issue 28): the measured method's
                figures["method_summary_s"], figures["method_summary_peak_mb"], _ = run(
                    "from predictors.models import Method\n"
                    "try:\n"
                    "    from comparna.services.pages.methods import refresh_method_summaries\n"
                    "except ImportError:\n"
                    "    pass\n"
                    "else:\n"
                    "    first = Method.objects.order_by('name')[0]\n"
                    "    refresh_method_summaries(Method.objects.filter(pk=first.pk))",
                    env,
                )
            except RuntimeError as exc:  # before the tallies existed: the pages compute live
                bench.notes.append(f"no tallies refresh: {str(exc)[-200:]}")
            biggest = max(Dataset.objects.all(), key=lambda d: d.targets.count())
            figures["snapshot_s"], figures["snapshot_peak_mb"], out = run(
                "from comparna.models import Dataset\n"
                "from comparna.snapshots.lifecycle import create_snapshot, build_snapshot\n"
                f"s = create_snapshot(dataset=Dataset.objects.get(pk={biggest.pk}))\n"
                "print(build_snapshot(snapshot=s).pk)",
                env,
            )
            snapshot = DatasetSnapshot.objects.get(pk=int(out.split()[-1]))
            figures["snapshot_bytes"] = snapshot.size
            t = time.perf_counter()
            verified = verify_archive(snapshot_path(snapshot), expected_sha256=snapshot.sha256)
            figures["snapshot_verify_s"] = time.perf_counter() - t
            bench.check("snapshot built and verified", snapshot.status == "done" and verified.ok)
            if not verified.ok:
                bench.notes.append(f"snapshot problems: {verified.problems[:5]}")

            # the families and unseen pages' computations, uncached
            from comparna.services.pages import families as family_pages

            t = time.perf_counter()
            family_pages._breakdown(biggest, biggest.definitions[0])
            figures["families_compute_s"] = time.perf_counter() - t

            # progress: what the pages read (system) against the computation from the predictions table
            import inspect

            from django.core.cache import cache

            from comparna.services import progress  # imported here: the code of the tree at this point

            live_kw = (
                {"live": True} if "live" in inspect.signature(progress.prediction_progress).parameters else {}
            )

            cache.clear()
            timings = {"system": [], "baseline": []}
            for _ in range(args.repeats):
                t = time.perf_counter()
                shown = progress.prediction_progress()
                timings["system"].append(time.perf_counter() - t)
                t = time.perf_counter()
                live = progress.prediction_progress(**live_kw)
                timings["baseline"].append(time.perf_counter() - t)
            bench.check(
                "progress read from the tallies equals the live count",
                (shown["total"], shown["pending"]) == (live["total"], live["pending"]),
            )
            figures["progress_s"] = float(np.median(timings["system"]))
            figures["progress_live_s"] = float(np.median(timings["baseline"]))

            paths = urls()
            pages, sizes = measure_pages(paths, args.repeats)
            computed = measure_computed_comparison(paths["compare"], args.repeats, env, run)
            if computed is not None:
                figures["comparison_compute_s"], pages["compare, computed"] = computed
                sizes["compare, computed"] = pages["compare, computed"]["bytes"]
            figures["pages"] = {
                name: {"cold_p95_s": v["cold_p95_s"], "warm_p95_s": v["warm_p95_s"]}
                for name, v in pages.items()
            }
            figures["largest_page"] = max(sizes, key=sizes.get)
            figures["largest_page_bytes"] = sizes[figures["largest_page"]]
            bench.check(
                "every page and API list answered 200",
                set(paths) - set(pages) <= {"weeks", "week"} and len(pages) >= 30,
            )

            # queue a new method on every target
            from predictors.models import Method, MethodVersion, Prediction
            from predictors.services import queue_predictions

            method = Method.objects.create(name="BrandNewFold", description="new")
            version = MethodVersion.objects.create(
                method=method,
                version="1",
                program="brandnew",
                fingerprint="brand-new",
                spec={
                    "name": "BrandNewFold",
                    "program": "brandnew",
                    "version": "1",
                    "argv": ["x", "{input}"],
                    "input_kind": "single",
                    "max_length": 0,
                    "time_limit_s": 60.0,
                    "memory_limit_mb": 512,
                },
            )
            t = time.perf_counter()
            queued = queue_predictions(versions=[version])
            figures["queue_new_method_s"] = time.perf_counter() - t
            bench.check(
                "the new method is queued on every target",
                queued == rows["targets"] == Prediction.objects.filter(method_version=version).count(),
            )
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_database_size(current_database())")
                figures["db_mb"] = cursor.fetchone()[0] / 2**20
            connection.close()

        worst_cold = max(pages, key=lambda n: pages[n]["cold_p95_s"])
        worst_warm = max(pages, key=lambda n: pages[n]["warm_p95_s"])
        warm_floor = min(v["warm_p50_s"] for v in pages.values())
        bench.compare(
            "pages, worst cold p95",
            unit="s per request",
            system=(pages[worst_cold]["cold_p95_s"], f"{worst_cold}: cache cleared, Django test client"),
            limit=(warm_floor, "the fastest warm page (a page-cache hit)"),
        )
        bench.compare(
            "pages, worst warm p95",
            unit="s per request",
            system=(pages[worst_warm]["warm_p95_s"], f"{worst_warm}: cache kept"),
            limit=(warm_floor, "the fastest warm page (a page-cache hit)"),
        )
        bench.compare(
            "progress/ETA",
            unit="s per computation",
            system=(figures["progress_s"], "progress.prediction_progress as the pages call it"),
            baseline=(figures["progress_live_s"], "the same counts from the predictions table"),
            limit=(warm_floor, "the fastest warm page (a page-cache hit)"),
        )
        for key, budget, what in (
            ("ranking_s", "ranking", "nightly rankings of every subset"),
            ("snapshot_s", "snapshot", "largest dataset's snapshot"),
            ("queue_new_method_s", "queue", "queueing a new method on every target"),
        ):
            bench.compare(
                what,
                unit="s",
                system=(figures[key], what + " (child process)" * (key != "queue_new_method_s")),
                limit=(BUDGET[budget], "the issue's budget"),
            )
        figures["pages_detail"] = pages
        figures["budgets"] = BUDGET
        figures["meets"] = {
            "pages cold p95 <= 0.5 s": all(v["cold_p95_s"] <= BUDGET["page_cold"] for v in pages.values()),
            "pages warm p95 <= 0.05 s": all(v["warm_p95_s"] <= BUDGET["page_warm"] for v in pages.values()),
            "rankings <= 15 min, <= 2 GB": figures["ranking_s"] <= BUDGET["ranking"]
            and figures["ranking_peak_mb"] <= BUDGET["ranking_mb"],
            "snapshot <= 10 min, <= 1 GB": figures["snapshot_s"] <= BUDGET["snapshot"]
            and figures["snapshot_peak_mb"] <= BUDGET["snapshot_mb"],
            "queue new method <= 60 s": figures["queue_new_method_s"] <= BUDGET["queue"],
        }
        bench.details.update(figures)
    return bench.finish()


if __name__ == "__main__":
    raise SystemExit(main())
