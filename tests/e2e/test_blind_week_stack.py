"""A whole blind week on the production stack, unattended under beat, on a time-travel clock.

PostgreSQL, Redis, a ``predict`` and a ``default`` Celery worker, beat and gunicorn all read one
``COMPARNA_CLOCK`` running a few thousand times real time from Saturday 02:30 UTC, so the week — the wwPDB's
Saturday file, predictions, the commitment at the deadline, Wednesday's release, the weekly PDB poll, links,
scores and rankings — passes in about a minute. The local wwPDB and RCSB stand-ins follow the same
clock. Faults on the way: the file is late (last week's stays in place for hours, then a truncated one), an
announced entry is withdrawn, a released chain is unusable, and an external method submits after the
deadline (stored, marked late, never ranked). At the end a stored blind prediction is changed: verify_blind
and the week page both report it.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import time

import psycopg
import pytest
import requests

from comparna.clock import parse_clock
from ingest.pdb import prerelease as pr
from tests.django.test_blind_week import SAMPLES, observed, week_files
from tests.e2e.stack import free_port, production_stack, wait_for
from tests.support.local_rcsb import FIXTURE_FILES, LocalEntry, LocalRcsb
from tests.support.local_wwpdb import LocalWwpdb

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

UTC = dt.UTC
START = dt.datetime(2024, 1, 6, 2, 50, tzinfo=UTC)  # Saturday, before the files appear (03:00)
OPENS = dt.datetime(2024, 1, 6, 3, 0, tzinfo=UTC)
STARTUP_S = 12  # real seconds from starting the processes to the clock's START (a guess: see below; 12-15 s
# measured at load 5-6, 23 s at load 14: up to ~34 s is tolerated, the schedule starts from when they are up)
RATE = 5000  # simulated seconds per real second: Saturday 03:00 -> Wednesday 03:00 in ~70 s
RELEASE = dt.date(2024, 1, 10)
FAULT_H = 5  # simulated hours of each fault: last week's file stays, then a truncated one
METHODS = ("RNAfold-MFE", "LinearFold-V")
ROWS = [
    ("9GID", "1", "1GID_1"),  # released with two copies: scored
    ("9BTK", "2", "8BTK_2"),  # released as entity 2: scored
    ("9QLN", "1", "4QLN_1"),  # released chain has backbone breaks: closed
    ("9EHZ", "1", "1EHZ_1"),  # the backfilled tRNA: not novel
    ("9HY9", "1", "2HY9_1"),  # DNA
]

SETUP = """
import json
from django.core.management import call_command
call_command("sync_predictors", "--only", "RNAfold-MFE", "--only", "LinearFold-V")
call_command("poll_pdb", "--since", "2023-11-01", "--until", "2023-12-31", "--no-progress")  # backfill
from django.contrib.auth.models import User
from django.utils import timezone
from comparna.owners.models import ApiToken, OwnerProfile
from predictors.core.spec import PredictorSpec
from predictors.models import Method
from predictors.services import register_spec
out = {}
for name, method in (("bob", "BobServer"), ("carol", "CarolServer")):
    user = User.objects.create_user(name, name + "@x.org", "a long passphrase 42")
    OwnerProfile.objects.create(user=user, email_confirmed_at=timezone.now(), approved_at=timezone.now())
    spec = PredictorSpec(name=method, program=method.lower(), version="1", argv=(), kind="web", endpoint=None)
    version = register_spec(spec=spec, from_catalogue=False, active=True)
    Method.objects.filter(pk=version.method_id).update(owner=user, visibility="public")
    out[name] = ApiToken.issue(user=user, name=name)[1]
print(json.dumps(out))
"""


def rows(db: str, sql: str, *args) -> list[tuple]:
    with psycopg.connect(db) as conn:
        return conn.execute(sql, args).fetchall()


def one(db: str, sql: str, *args):
    found = rows(db, sql, *args)
    return found[0][0] if found else None


def test_blind_week_under_beat_with_faults(mmcif_dir):
    clock = [lambda: START - dt.timedelta(hours=1)]  # until the stack's clock starts

    def now() -> dt.datetime:
        return clock[0]()

    def entry(pdb_id, release, name):
        return LocalEntry(pdb_id, release, mmcif_dir / FIXTURE_FILES[name])

    entries = [
        entry("1EHZ", dt.date(2023, 12, 6), "1EHZ"),  # backfill: the novelty reference set
        entry("9GID", RELEASE, "1GID"),
        entry("9BTK", RELEASE, "8BTK"),
        entry("9QLN", RELEASE, "4QLN"),
    ]
    plain, canonical = week_files(ROWS)
    withdrawn = observed(mmcif_dir, "6g90_1.cif", "1").split("N")[0]  # a real RNA, announced, then withdrawn
    plain += f"9WDR\t1\t{withdrawn}\n"
    canonical += f"9WDR\t1\t{withdrawn}\n"
    last_week = START - dt.timedelta(days=7)

    with LocalRcsb(entries, clock=now) as rcsb, LocalWwpdb(clock=now) as wwpdb:
        rcsb.holdings["9WDR"] = ("UNRELEASED", "WDRN")
        for name in (pr.SEQUENCE_FILE, pr.CANONICAL_FILE):  # last week's files: stale from 03:00 on
            wwpdb.publish(name, (SAMPLES / name).read_text(), at=last_week)

        web_port = free_port()
        with production_stack(
            extra_env={
                "COMPARNA_RCSB_SEARCH_URL": rcsb.search_url,
                "COMPARNA_RCSB_DOWNLOAD_URL": rcsb.download_url,
                "COMPARNA_RCSB_DATA_URL": rcsb.data_url,
                "COMPARNA_RCSB_RETRIES": "1",
                "COMPARNA_RCSB_TIMEOUT_S": "20",
                "COMPARNA_WWPDB_FILES_URL": wwpdb.base_url,
                "COMPARNA_PDB_BENCHMARK_START": "2024-01-01",
                "COMPARNA_BLIND_DEADLINE_BEFORE_RELEASE_S": "86400",  # Tuesday 00:00: 17 s before release
                "COMPARNA_BLIND_POLL_INTERVAL_S": "1",
                "COMPARNA_BLIND_TICK_S": "1",
                "COMPARNA_BLIND_RELEASE_CHECK_S": "3",
                "COMPARNA_PDB_POLL_INTERVAL_S": "2",
            }
        ) as stack:
            db = stack.env["DATABASE_URL"]
            # one process: the catalogue's methods, the backfill (novelty reference set), two method owners
            tokens = json.loads(stack.manage("shell", "-c", SETUP).stdout.strip().splitlines()[-1])

            # the clock reads START soon after the processes are started; they all read the same clock
            begun = time.time()
            origin = begun + STARTUP_S
            spec = f"{START:%Y-%m-%dT%H:%M:%S}Z@{origin:.3f}x{RATE}"
            stack.env["COMPARNA_CLOCK"] = spec
            clock[0] = parse_clock(spec).now
            workers = [stack.start_worker(q, concurrency=2) for q in ("predict", "default")]
            stack.start_beat()
            url = stack.start_web(web_port)
            wait_for(lambda: all("ready." in w.tail(100000) for w in workers), timeout=60,
                     interval=0.2, what="the workers")
            # fault: the file is late. The schedule starts from when the stack is up (its start time
            # varies with the machine's load): last week's file stays FAULT_H more hours, then a file cut
            # mid-line for FAULT_H hours, then the week's files.
            ready = max(now(), OPENS)
            took = time.time() - begun
            assert ready < OPENS + dt.timedelta(hours=30), f"the stack took {took:.0f} s to start"
            truncated_at, good_at = (ready + dt.timedelta(hours=FAULT_H * k) for k in (1, 2))
            wwpdb.publish(pr.SEQUENCE_FILE, plain.encode()[: len(plain.encode()) * 2 // 3], at=truncated_at)
            wwpdb.publish(pr.CANONICAL_FILE, canonical, at=truncated_at)
            wwpdb.publish(pr.SEQUENCE_FILE, plain, at=good_at)
            wwpdb.publish(pr.CANONICAL_FILE, canonical, at=good_at)
            print(f"stack up in {time.time() - begun:.1f} s, clock at {now():%a %H:%M}")
            try:
                run_week(stack, db, url, tokens, now, good_at)
            except (TimeoutError, AssertionError):
                print(stack.logs())
                raise


def run_week(stack, db, url, tokens, now, good_at) -> None:
    begun = time.time()
    week_sql = "select id, status from blind_blindweek where release_date = %s"

    # Saturday: beat polls; last week's file (stale), a truncated one (malformed), then the week's
    # the week is open once the import commits; the attempt's outcome is written just after: wait for both
    unrecorded = ("select count(*) from blind_prereleaserun r join blind_blindweek w on w.id = r.week_id "
                  "where w.release_date = %s and r.outcome = ''")
    wait_for(lambda: one(db, "select status from blind_blindweek where release_date = %s", RELEASE) == "open"
             and one(db, unrecorded, RELEASE) == 0, timeout=60, interval=0.2, what="the pre-release import")
    week_id = rows(db, week_sql, RELEASE)[0][0]
    outcomes = [r[0] for r in rows(db, "select outcome from blind_prereleaserun where week_id = %s "
                                       "order by attempt", week_id)]
    assert outcomes[-1] == "imported" and outcomes.count("imported") == 1, outcomes
    assert "stale" in outcomes and "malformed" in outcomes, outcomes
    imported_at = one(db, "select imported_at from blind_blindweek where id = %s", week_id)
    # (imported_at is the clock when the attempt began: a few simulated minutes before the fetch)
    assert imported_at >= good_at - dt.timedelta(minutes=30)
    print(f"imported after {time.time() - begun:.1f} s at {imported_at:%a %H:%M}: {outcomes}")
    blind = dict(rows(db, "select b.pdb_id, b.target_id from blind_blindtarget b where b.week_id = %s",
                      week_id))
    assert sorted(blind) == ["9BTK", "9GID", "9QLN", "9WDR"]
    skipped = {s["polymer"]: s["reason"] for s in one(
        db, "select summary from blind_blindweek where id = %s", week_id)["skipped"]}
    assert "similar to a known chain" in skipped["9EHZ_1"] and "9HY9_1" in skipped

    # an external method's owner reads the targets and submits before the deadline, with a token
    listing = requests.get(f"{url}/api/blind/weeks/", timeout=30).json()
    [week] = [w for w in listing["weeks"] if w["release_date"] == str(RELEASE)]
    assert week["accepting"] is True
    target = next(t for t in week["targets"] if t["pdb_id"] == "9GID")
    bob = {"Authorization": f"Token {tokens['bob']}"}
    structure = "." * target["length"]
    submission = {"method": "BobServer", "target": target["id"], "structure": structure}
    anonymous = requests.post(f"{url}/api/blind/predictions/", json=submission, timeout=30)
    assert anonymous.status_code in (401, 403)
    r = requests.post(f"{url}/api/blind/predictions/", json=submission, headers=bob, timeout=30)
    assert r.status_code == 201, r.text
    receipt = r.json()
    assert receipt["late"] is False

    # every prediction of the catalogue's methods is frozen before the deadline, then the commitment
    try:
        wait_for(lambda: one(db, "select status from blind_blindweek where id = %s", week_id) == "committed",
                 timeout=90, interval=0.2, what="the commitment at the deadline")
    except TimeoutError:
        pytest.fail(f"no commitment; clock at {now()}")
    committed_at, deadline, release_at, sha = rows(
        db, "select committed_at, deadline, release_at, commitment_sha256 from blind_blindweek where id = %s",
        week_id)[0]
    assert deadline <= committed_at < release_at  # committed before the release: blind
    print(f"committed after {time.time() - begun:.1f} s at {committed_at:%a %H:%M}")
    # fault: a method late — an owner submits after the deadline (stored, frozen late, never ranked)
    carol = {"Authorization": f"Token {tokens['carol']}"}
    late = requests.post(f"{url}/api/blind/predictions/", headers=carol, timeout=30,
                         json={**submission, "method": "CarolServer"})
    assert late.status_code == 201 and late.json()["late"] is True, late.text
    tsv = requests.get(f"{url}/blind/{RELEASE}/commitment.tsv", timeout=30)
    assert hashlib.sha256(tsv.content).hexdigest() == sha == tsv.headers["X-Content-SHA256"]
    lines = [line.split("\t") for line in tsv.text.splitlines() if line and not line.startswith("#")][1:]
    targets = ("9BTK_2", "9GID_1", "9QLN_1", "9WDR_1")
    expected = {(m, t) for m in METHODS for t in targets} | {("BobServer", "9GID_1")}
    assert sorted((m, t) for _, t, m, *_ in lines) == sorted(expected)
    assert receipt["sha256"] in tsv.text and late.json()["sha256"] not in tsv.text
    hidden = requests.get(f"{url}/api/predictions/", params={"dataset": "pdb-blind"}, timeout=30).json()
    assert hidden["results"] == [] or now() >= release_at  # embargoed until the release (the clock runs on)

    # Wednesday: released; the weekly poll (beat) fetches the entries, the blind targets are linked
    try:
        wait_for(lambda: one(db, "select status from blind_blindweek where id = %s", week_id) == "done",
                 timeout=90, interval=0.5, what="release, links and closures")
        n_rankings = "select count(*) from blind_blindranking where scope = %s"
        wait_for(lambda: one(db, n_rankings, str(RELEASE)) >= 2, timeout=60, interval=0.5,
                 what="the week's blind rankings")
    except TimeoutError:
        pytest.fail(f"clock at {now()}")
    print(f"scored and ranked after {time.time() - begun:.1f} s, clock at {now():%a %H:%M}")
    states = {p: (s, r) for p, s, r in rows(db, "select pdb_id, state, reason from blind_blindtarget")}
    assert states["9GID"][0] == states["9BTK"][0] == "scored"
    assert states["9QLN"][0] == "closed" and "backbone breaks" in states["9QLN"][1]
    assert states["9WDR"] == ("closed", "withdrawn before release (unreleased (WDRN: withdrawn))")
    ranking = rows(db, "select inputs, report from blind_blindranking where scope = %s and definition = "
                       "'standard' order by computed_at desc limit 1", str(RELEASE))[0]
    assert set(ranking[0]["methods"]) == {*METHODS, "BobServer"}  # CarolServer: late, never ranked
    assert ranking[0]["targets"] == 2
    late_scores = one(db, "select count(*) from blind_blindscore s join blind_frozenprediction f on "
                          "f.id = s.frozen_id where f.late and f.method_name = 'CarolServer'")
    assert late_scores == 2  # scored and shown apart, both definitions

    # after the release anyone recomputes every committed hash
    published = requests.get(f"{url}/blind/{RELEASE}/predictions.json", timeout=30).json()
    committed = {line[0]: line[5] for line in lines}
    for p in published["predictions"]:
        text = json.dumps(p["content"], sort_keys=True, separators=(",", ":"), ensure_ascii=True)
        if str(p["prediction"]) in committed:
            assert hashlib.sha256(text.encode()).hexdigest() == committed[str(p["prediction"])]
    page = requests.get(f"{url}/blind/{RELEASE}/", timeout=30).text
    assert 'data-ok="true"' in page

    # a stored blind prediction changed after the commitment: the command and the page both say so
    changed = next(line for line in lines if line[2] == "RNAfold-MFE" and line[1] == "9GID_1")[0]
    with psycopg.connect(db) as conn:
        conn.execute("update predictors_prediction set pairs = '' where id = %s", (int(changed),))
    verify = stack.manage("verify_blind", "--week", str(RELEASE), check=False)
    assert verify.returncode == 1
    said = f"prediction {changed} (RNAfold-MFE on 9GID_1): changed after the commitment: pairs"
    assert said in verify.stdout
    page = requests.get(f"{url}/blind/{RELEASE}/", timeout=30).text
    assert 'data-ok="false"' in page
    row = f"<td>{changed}</td><td>RNAfold-MFE</td><td>9GID_1</td><td>changed after the commitment: pairs"
    assert row in page
