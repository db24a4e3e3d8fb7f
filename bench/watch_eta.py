#!/usr/bin/env python3
"""Is the ETA honest? The ETA a running instance shows, sampled next to what then happens (issue 37).

Not a ``bench_*.py`` (no baseline: it watches a whole running instance for many minutes), so ``make test``
does not run it. Run from the instance's checkout (its data dir: the database is read, never written) while
it runs, e.g. beside ``bench/watch_fill.py --launch "bash scripts/run.sh"``::

    .venv/bin/python bench/watch_eta.py --url http://127.0.0.1:8000 --interval 120 --timeout 7200 --json

Every ``--interval`` seconds it reads, as a visitor does, the ETA sentence of the home page and of every
dataset's page (``#progress-eta``), and from the database each dataset's public predictions still to run
(queued or running, active methods) and those finished since the last sample. At the end (``--json``) it
gives, per dataset, the minute its queue first reached zero (``finished_minutes``, None if not within the
run) and for each sample the minute the shown ETA predicted (``predicted_minutes`` = sample minute + ETA):
an honest ETA predicts the minute that happens. Beside it, the naive figure the page used to give — the
remaining predictions at the rate of the last interval (``naive_minutes``) — and the real finishing rate.
"""

from __future__ import annotations

import argparse
import html
import json
import os
import re
import sys
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SENTENCE = re.compile(r'<p id="progress-eta"><strong>(.*?)</strong>', re.S)
DURATION = re.compile(r"(?:(\d+) d )?(?:(\d+) h )?(?:(\d+) min)?")


def setup_django() -> None:
    sys.path.insert(0, str(REPO))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "comparna.settings")
    import django

    django.setup()


def minutes_of(sentence: str) -> tuple[float | None, str]:
    """(minutes, "about" | "at least" | "") of an ETA sentence (None: no estimate)."""
    m = re.match(r"ETA: (about|at least) (.+?) \(≈", sentence)
    if not m:
        return None, ""
    text = m.group(2)
    if text == "under a minute":
        return 0.5, m.group(1)
    d = DURATION.fullmatch(text)
    if not d or not any(d.groups()):
        return None, m.group(1)
    days, hours, mins = (int(g or 0) for g in d.groups())
    return float((days * 24 + hours) * 60 + mins), m.group(1)


def page_eta(url: str) -> str:
    try:
        with urllib.request.urlopen(url, timeout=60) as r:
            body = r.read().decode()
    except OSError as exc:
        return f"(unreachable: {exc})"
    m = SENTENCE.search(body)
    return " ".join(html.unescape(m.group(1)).split()) if m else ""


def counts() -> dict[str, dict[str, int]]:
    """{dataset slug: {"left": public predictions queued or running (active methods), "done": finished}}."""
    from django.db.models import Count, Q

    from comparna.models import Dataset
    from predictors.models import Prediction

    left = Q(status__in=("queued", "running"), method_version__method__active=True)
    out = {slug: {"left": 0, "done": 0} for slug in Dataset.objects.values_list("slug", flat=True)}
    rows = (Prediction.objects.public().values("target__dataset__slug")
            .annotate(left=Count("id", filter=left),
                      done=Count("id", filter=~Q(status__in=("queued", "running", "awaiting"))))
            .order_by())
    for row in rows:
        out[row["target__dataset__slug"]] = {"left": row["left"], "done": row["done"]}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default="http://127.0.0.1:8000")
    parser.add_argument("--interval", type=float, default=120.0)
    parser.add_argument("--timeout", type=float, default=3600.0)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--t0", type=float, help="Epoch seconds the minutes count from (default: now).")
    args = parser.parse_args(argv)
    setup_django()
    from comparna.models import Dataset

    start = time.monotonic() - (time.time() - args.t0 if args.t0 else 0.0)
    series, finished, previous = [], {}, None
    while True:
        minute = (time.monotonic() - start) / 60
        now = counts()
        sample = {"minute": round(minute, 2), "load1": os.getloadavg()[0], "site": page_eta(args.url + "/"),
                  "datasets": {}}
        for slug, c in now.items():
            before = (previous or {}).get(slug, {"done": c["done"]})
            rate = (c["done"] - before["done"]) / (args.interval / 60) if previous else None
            sentence = page_eta(f"{args.url}/rankings/{slug}/") if c["left"] else ""
            eta, bound = minutes_of(sentence)
            sample["datasets"][slug] = {
                "left": c["left"], "done": c["done"], "rate_per_min": rate, "eta": eta, "bound": bound,
                "predicted_minutes": round(minute + eta, 1) if eta is not None else None,
                "naive_minutes": round(minute + c["left"] / rate, 1) if rate else None,
            }
            if c["left"] == 0 and slug not in finished and previous is not None:
                finished[slug] = round(minute, 1)
        eta, bound = minutes_of(sample["site"])
        sample["site_minutes"] = eta
        sample["site_predicted_minutes"] = round(minute + eta, 1) if eta is not None else None
        series.append(sample)
        line = [f"{minute:6.1f} min load {sample['load1']:.1f} site: {bound} {eta}"]
        for slug, d in sample["datasets"].items():
            if d["left"] or slug not in finished:
                line.append(f"  {slug}: left {d['left']} rate {d['rate_per_min']} eta {d['bound']} {d['eta']}"
                            f" -> min {d['predicted_minutes']} (naive {d['naive_minutes']})")
        print("\n".join(line), flush=True)
        previous = now
        if all(c["left"] == 0 for c in now.values()) or time.monotonic() - start > args.timeout:
            break
        time.sleep(max(0.0, args.interval - ((time.monotonic() - start) / 60 - minute) * 60))
    names = dict(Dataset.objects.values_list("slug", "name"))
    if args.json:
        print(json.dumps({"finished_minutes": finished, "names": names, "series": series}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
