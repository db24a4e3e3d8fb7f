"""The weekly PDB path on the production stack, unattended: beat fires the poll over a local RCSB, new
targets are predicted by every active method on the workers, the ranking job and the weekly dataset
snapshot run, and the snapshot downloads intact (and resumes) through gunicorn.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import subprocess
import sys

import psycopg
import pytest
import requests

from tests.e2e.stack import REPO, production_stack, wait_for
from tests.support.local_rcsb import FIXTURE_FILES, LocalEntry, LocalRcsb

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

METHODS = ("RNAfold-MFE", "LinearFold-V", "RNAalifold(seed)")


def one(db: str, sql: str, *args):
    with psycopg.connect(db) as conn:
        return conn.execute(sql, args).fetchone()


def test_weekly_poll_predicts_ranks_and_snapshots_unattended(mmcif_dir, tmp_path):
    def entry(pdb_id, release, file_of=None):
        return LocalEntry(pdb_id, release, mmcif_dir / FIXTURE_FILES[file_of or pdb_id])

    wed = dt.date(2024, 1, 3)
    entries = [
        entry("1EHZ", dt.date(2023, 12, 6)),  # before the benchmark start: novelty reference
        entry("9EHZ", wed, "1EHZ"),  # the same tRNA again: not novel
        entry("1GID", wed),  # group I intron P4-P6, two identical chains
        entry("8BTK", wed + dt.timedelta(7)),
        entry("2HY9", wed + dt.timedelta(7)),  # DNA
    ]
    with (
        LocalRcsb(entries) as rcsb,
        production_stack(
            extra_env={
                "COMPARNA_RCSB_SEARCH_URL": rcsb.search_url,
                "COMPARNA_RCSB_DOWNLOAD_URL": rcsb.download_url,
                "COMPARNA_PDB_BENCHMARK_START": "2024-01-01",
                "COMPARNA_PDB_POLL_INTERVAL_S": "5",
                "COMPARNA_RANKING_INTERVAL_S": "5",
            }
        ) as stack,
    ):
        db = stack.env["DATABASE_URL"]
        stack.manage("sync_predictors", *[a for m in METHODS for a in ("--only", m)])
        out = stack.manage(
            "poll_pdb", "--since", "2023-11-01", "--until", "2023-12-31", "--no-progress"
        ).stdout
        assert "backfill" in out
        stack.start_worker("predict", concurrency=2)
        stack.start_worker("default,families", name="worker-default")
        stack.start_beat()

        # Beat polls from the benchmark start to today, then the workers predict every new target.
        try:
            wait_for(
                lambda: one(db, "select count(*) from ingest_pollrun where status='done' and not backfill")[
                    0
                ],
                timeout=180,
                interval=1,
                what="the weekly poll",
            )
            wait_for(
                lambda: (
                    one(
                        db, "select count(*) from predictors_prediction where status in ('queued','running')"
                    )[0]
                    == 0
                    and one(db, "select count(*) from predictors_prediction")[0] > 0
                ),
                timeout=300,
                interval=1,
                what="predictions of the new targets",
            )
        except TimeoutError:
            pytest.fail(stack.logs())
        pdb_targets = (
            "select source_id from comparna_target t join comparna_dataset d on d.id = t.dataset_id "
            "where d.slug = 'pdb'"
        )
        targets = {r[0] for r in psycopg.connect(db).execute(pdb_targets).fetchall()}
        assert targets == {"1GID_A", "8BTK_B7"}
        rows = (
            psycopg.connect(db)
            .execute(
                "select m.name, p.status from predictors_prediction p join predictors_methodversion v on "
                "v.id=p.method_version_id join predictors_method m on m.id=v.method_id "
                "join comparna_target t on t.id=p.target_id where t.pdb_id <> ''"
            )
            .fetchall()
        )
        single = [m for m in METHODS if "(" not in m]
        assert sorted((m, s) for m, s in rows if m in single) == sorted(
            (m, "ok") for m in single for _ in targets
        )

        # The nightly job (on a short interval here) ranks the PDB subsets; the weekly snapshot is built.
        try:
            wait_for(
                lambda: (
                    one(
                        db,
                        "select count(*) from comparna_rankingsnapshot r join comparna_dataset d "
                        "on d.id=r.dataset_id where d.slug='pdb' and (r.inputs->'methods') ?& %s",
                        single,
                    )[0]
                    >= 2
                ),
                timeout=120,
                interval=1,
                what="PDB rankings",
            )
            number, sha, size = wait_for(
                lambda: one(
                    db,
                    "select s.number, s.sha256, s.size from comparna_datasetsnapshot s join "
                    "comparna_dataset d on d.id=s.dataset_id where d.slug='pdb' and s.status='done' "
                    "order by s.number desc limit 1",
                ),
                timeout=180,
                interval=1,
                what="the weekly dataset snapshot",
            )
        except TimeoutError:
            pytest.fail(stack.logs())

        url = stack.start_web()
        page = requests.get(f"{url}/rankings/pdb/", timeout=30)
        assert page.status_code == 200 and "RNAfold-MFE" in page.text

        download = f"{url}/snapshots/pdb/{number}/download"
        full = requests.get(download, timeout=60)
        assert full.status_code == 200 and len(full.content) == size == int(full.headers["Content-Length"])
        assert hashlib.sha256(full.content).hexdigest() == sha
        assert sha in full.headers["ETag"]
        # A broken download resumed from byte N gives the same file.
        cut = size // 3
        rest = requests.get(
            download, headers={"Range": f"bytes={cut}-", "If-Range": full.headers["ETag"]}, timeout=60
        )
        assert rest.status_code == 206 and rest.headers["Content-Range"] == f"bytes {cut}-{size - 1}/{size}"
        assert hashlib.sha256(full.content[:cut] + rest.content).hexdigest() == sha
        archive = tmp_path / "pdb.tar.gz"
        archive.write_bytes(full.content[:cut] + rest.content)
        verify = subprocess.run(
            [sys.executable, "manage.py", "verify_snapshot", str(archive)],
            cwd=REPO,
            env=stack.env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert verify.returncode == 0, verify.stdout + verify.stderr
