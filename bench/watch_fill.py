#!/usr/bin/env python3
"""How fast the rankings fill after ``make run``: a time series of common targets (issue 13, Done-when
"the all-RNAs ranking has every method on >= 200 common targets within 15 minutes").

Not a ``bench_*.py`` (no baseline or limit: it watches a whole running instance for many minutes), so
``make test`` does not run it. Run from a checkout, against that checkout's data dir, either watching an
instance already running or launching one itself (the clock starts at the launch)::

    .venv/bin/python bench/watch_fill.py --launch "bash scripts/run.sh" --until 200 --timeout 1800
    .venv/bin/python bench/watch_fill.py --interval 60          # an instance started by hand

Every ``--interval`` seconds it prints one line (and with ``--json`` one JSON object at the end): minutes
since the start, the 1-minute load, predictions finished and the rate over the last interval, and for the
dataset's ``all`` subset (RNA STRAND by default) the targets every active single-sequence method has scored
(``common``), every method's finished outcome (``finished``: ok, failed, timeout, too long, unparsable) and
the fewest targets any method has scored, plus what the newest stored ranking of that subset says.
With ``--until N`` it stops once the newest stored ranking of the subset holds every method compared on
``>= N`` targets all of them scored (what a visitor of the ranking page sees; the launched instance is
stopped with it); the JSON also gives when the database first held N common targets
(``common_reached_minutes``; the ranking follows at its next refresh) and when every method of the ranking
also had a determined verdict on ``>= N`` common targets (``all_decided_minutes``; ``--decided`` waits for
that too). The two differ: a method whose every pairwise test is still under-powered is in the ranking,
listed as "not ranked yet" with its reason, until the evidence (targets and families) decides.

``--dataset`` may be given several times (issue 28: every dataset must fill early): each sample then has
one line per dataset, ``--until`` waits for all of them, and with ``--snapshot`` also for each dataset's
first downloadable snapshot holding predictions; the JSON gives per dataset ``reached_minutes`` and
``snapshot_minutes``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FINAL = ("ok", "failed", "timeout", "too_long", "unparsable")


def setup_django() -> None:
    sys.path.insert(0, str(REPO))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "comparna.settings")
    import django

    django.setup()


def sample(dataset: str) -> dict:
    """One observation of the database (every figure from committed rows)."""
    from django.db.models import Count

    from comparna.models import Subset
    from predictors.models import Method, Prediction

    subset = Subset.objects.filter(dataset__slug=dataset, slug="all").first()
    methods = list(
        Method.objects.filter(active=True, input_kind=Method.InputKind.SINGLE)
        .filter(visibility=Method.Visibility.PUBLIC)
        .values_list("name", flat=True)
    )
    current = Prediction.objects.filter(
        method_version__is_current=True, method_version__method__name__in=methods
    )
    states = dict(current.values_list("status").annotate(n=Count("pk")).values_list("status", "n"))
    out = {"methods": len(methods), "states": states, "common": 0, "finished": 0, "fewest_scored": 0}
    if subset is None or not methods:
        return out
    mine = current.filter(target__subsets=subset)
    ok: dict[int, int] = {}
    done: dict[int, int] = {}
    per_method: dict[str, int] = dict.fromkeys(methods, 0)
    for target, name, status in mine.values_list("target_id", "method_version__method__name", "status"):
        if status == "ok":
            ok[target] = ok.get(target, 0) + 1
            per_method[name] += 1
        if status in FINAL:
            done[target] = done.get(target, 0) + 1
    out["common"] = sum(1 for n in ok.values() if n == len(methods))
    out["finished"] = sum(1 for n in done.values() if n == len(methods))
    out["fewest_scored"] = min(per_method.values())
    out["targets"] = subset.targets.count()
    from comparna.snapshots.models import DatasetSnapshot

    archived = (
        DatasetSnapshot.objects.filter(dataset__slug=dataset, status=DatasetSnapshot.Status.DONE)
        .order_by("-number")
        .values_list("number", "contents")
    )
    with_predictions = [(n, c) for n, c in archived if (c or {}).get("predictions")]
    if with_predictions:
        number, contents = with_predictions[0]
        out["snapshot"] = {"number": number, "predictions": contents.get("predictions"),
                           "unfinished": contents.get("unfinished_predictions")}
    snap = subset.rankings.order_by("-computed_at").first()
    if snap is not None:
        report = snap.report or {}
        in_report = {row["method"] for row in report.get("methods", [])}
        out["ranking"] = {
            "computed_at": snap.computed_at.isoformat(),
            "methods": len(in_report & set(methods)),
            "common_all": common_of_all(report, methods),
            "ranked_methods": len(report.get("ranked_methods", []) or []),
            "common_targets_ranked": report.get("common_targets_ranked"),
        }
    return out


def common_of_all(report: dict, methods: list[str]) -> int | None:
    """The targets every one of ``methods`` had scored in a stored ranking (its per-method bitmaps): the
    targets the ranking compares all of them on, whether or not their verdicts are determined yet."""
    from comparna.services.ranking_scope import scored_targets

    sets = [scored_targets(report, name) for name in methods]
    if not sets or any(s is None for s in sets):
        return None
    return len(set.intersection(*sets))


def load1() -> float:
    return os.getloadavg()[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--launch", help="Start this command (in its own process group) and time from then.")
    parser.add_argument("--dataset", action="append", help="Dataset slug, repeatable (default rnastrand).")
    parser.add_argument("--snapshot", action="store_true",
                        help="With --until: also wait for each dataset's first snapshot holding predictions.")
    parser.add_argument("--interval", type=float, default=60.0, help="Seconds between samples.")
    parser.add_argument("--until", type=int, help="Stop once this many common targets are reached.")
    parser.add_argument("--decided", action="store_true",
                        help="With --until: also wait until every method has a determined verdict.")
    parser.add_argument("--timeout", type=float, default=3600.0, help="Stop after this many seconds.")
    parser.add_argument("--json", action="store_true", help="Print the series as one JSON object at the end.")
    parser.add_argument("--log", help="Launched command's output goes here (default: discarded).")
    args = parser.parse_args(argv)
    args.dataset = args.dataset or ["rnastrand"]

    start = time.time()
    proc = None
    if args.launch:
        log = open(args.log, "ab") if args.log else subprocess.DEVNULL  # noqa: SIM115 - kept open while it runs
        proc = subprocess.Popen(args.launch, shell=True, cwd=REPO, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
    # stop cleanly (stopping the launched instance, printing the series) on SIGTERM or Ctrl-C
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    signal.signal(signal.SIGINT, signal.default_int_handler)
    setup_django()
    series: list = []
    try:
        loop(args, start, proc, series)
    except (KeyboardInterrupt, SystemExit):
        print("stopped", file=sys.stderr)
    finally:
        if proc is not None and proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
    def first(slug, test) -> float | None:
        return next((row["minutes"] for row in series if test(row["datasets"][slug])), None)

    per_dataset = {}
    until = args.until
    for slug in args.dataset:
        per_dataset[slug] = {
            "reached_minutes": None if until is None else first(slug, lambda s: ranked_on(s, until)),
            "common_reached_minutes": None if until is None else first(slug, lambda s: s["common"] >= until),
            "all_decided_minutes": None if until is None else first(slug, lambda s: all_decided(s, until)),
            "snapshot_minutes": first(slug, lambda s: "snapshot" in s),
        }
    result = {"datasets": per_dataset, "until": args.until, "series": series, "cores": os.cpu_count()}
    if len(args.dataset) == 1:  # the single-dataset keys of before
        result.update(dataset=args.dataset[0], **per_dataset[args.dataset[0]])
    if args.json:
        print(json.dumps(result, default=str))
    else:
        for slug, got in per_dataset.items():
            reached = got["reached_minutes"]
            print(f"{slug}: the ranking had every method on {args.until} common targets after {reached} min"
                  if reached is not None else
                  f"{slug}: the ranking did not reach {args.until} common targets")
            decided = got["all_decided_minutes"]
            print(f"{slug}: every method with a verdict on {args.until} common targets after {decided} min"
                  if decided is not None else f"{slug}: not every method had a verdict yet")
            print(f"{slug}: first snapshot with predictions after {got['snapshot_minutes']} min")
    return 0


def ranked_on(s: dict, n: int) -> bool:
    """The stored ranking holds every method, compared on at least ``n`` targets all of them scored (what
    issue 28 asks; a method whose verdicts are all still "?" is in it, listed as not ranked yet)."""
    rk = s.get("ranking") or {}
    return (rk.get("common_all") or 0) >= n and (rk.get("methods") or 0) >= s["methods"]


def all_decided(s: dict, n: int) -> bool:
    """Beyond :func:`ranked_on`: every method also has at least one determined verdict (win, loss or draw),
    on at least ``n`` common targets of the ranked methods. How soon depends on the statistics (alpha
    0.001 with Holm across every pair, families as clusters), not only on the filling."""
    rk = s.get("ranking") or {}
    return (rk.get("common_targets_ranked") or 0) >= n and (rk.get("ranked_methods") or 0) >= s["methods"]


def loop(args, start: float, proc, series: list) -> None:
    """Sample until the target is reached, the timeout passes or the launched command exits."""
    from django.db import connection
    from django.db.utils import DatabaseError

    last_done, last_t = None, None
    while time.time() - start < args.timeout:
        time.sleep(args.interval)
        if proc is not None and proc.poll() is not None:
            print(f"launched command exited with {proc.returncode}", file=sys.stderr)
            break
        now = time.time()
        try:
            samples = {slug: sample(slug) for slug in args.dataset}
        except DatabaseError as exc:  # not migrated yet, or locked: try again next time
            connection.close()
            print(f"{(now - start) / 60:6.1f} min  (database not ready: {exc})", file=sys.stderr)
            continue
        states = next(iter(samples.values()))["states"]  # every current prediction, whatever its dataset
        done = sum(n for k, n in states.items() if k in FINAL)
        rate = None if last_done is None else (done - last_done) / ((now - last_t) / 60)
        last_done, last_t = done, now
        row = {"minutes": round((now - start) / 60, 2), "load1": round(load1(), 2), "finished_all": done,
               "per_minute": None if rate is None else round(rate, 1), "states": states,
               "datasets": samples}
        if len(samples) == 1:  # the single-dataset keys of before
            row.update(next(iter(samples.values())))
        series.append(row)
        for slug, s in samples.items():
            rk = s.get("ranking") or {}
            print(
                f"{row['minutes']:6.1f} min  load {row['load1']:5.2f}  finished {done:6d}"
                f" ({'-' if rate is None else f'{rate:6.1f}'}/min)  queued {states.get('queued', 0):6d}"
                f"  {slug}: common {s['common']:4d}  finished-all {s['finished']:4d}"
                f"  fewest {s['fewest_scored']:4d}  ranking: {rk.get('methods', '-')} methods on"
                f" {rk.get('common_all', '-')} common, {rk.get('ranked_methods', '-')} with a verdict"
                f" (on {rk.get('common_targets_ranked', '-')})"
                f"  snapshot: {(s.get('snapshot') or {}).get('number', '-')}",
                file=sys.stderr, flush=True,
            )
        if args.until is not None and all(
            ranked_on(s, args.until)
            and (not args.snapshot or "snapshot" in s)
            and (not args.decided or all_decided(s, args.until))
            for s in samples.values()
        ):
            return


if __name__ == "__main__":
    sys.exit(main())
