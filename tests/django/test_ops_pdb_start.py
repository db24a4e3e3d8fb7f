"""The PDB set from the first start, against the loopback RCSB (tests/support/local_rcsb.py) and an address
where nothing answers.

Reachable: the weekly poll task is sent at once (and not again while it is queued or once the set has
begun), the home page shows the poll's progress. Unreachable: nothing is sent, the home page and the log
say "PDB unreachable: the weekly set starts when it is", and the scheduled retry sends the poll once the
RCSB answers.
"""

from __future__ import annotations

import datetime as dt
import logging

import pytest
from django.test import Client

from comparna.ops.pdb_start import UNREACHABLE, start_pdb_set
from comparna.ops.tasks import start_pdb_set_task
from comparna.scheduled import collect_schedules
from ingest.models import PollRun
from tests.support.broker import recording_broker
from tests.support.local_rcsb import LocalRcsb, fixture_entries

pytestmark = pytest.mark.django_db

NOWHERE = "http://127.0.0.1:9/rcsbsearch/v2/query"  # nothing listens on port 9 (discard)


@pytest.fixture
def pdb_settings(settings, tmp_path):
    settings.PDB_BENCHMARK_START = dt.date(2024, 1, 1)
    settings.RCSB_TIMEOUT_S = 5
    settings.PDB_DOWNLOAD_DIR = tmp_path / "pdb"
    return settings


def test_reachable_rcsb_starts_the_poll_at_once_and_only_once(pdb_settings, mmcif_dir, tmp_path):
    with LocalRcsb(fixture_entries(mmcif_dir)) as rcsb, recording_broker(tmp_path / "broker") as broker:
        pdb_settings.RCSB_SEARCH_URL = rcsb.search_url
        assert start_pdb_set() == "sent"
        assert [(m.task, m.queue) for m in broker.sent()] == [("ingest.tasks.poll_pdb_task", "default")]
        assert rcsb.hits("/rcsbsearch/") == 1
        page = Client().get("/").content.decode()
        assert 'data-state="queued"' in page and "released since 2024-01-01 is queued" in page

        assert start_pdb_set_task() == "queued"  # the schedule's next attempt: not sent twice
        PollRun.objects.create(since=dt.date(2024, 1, 1), until=dt.date(2024, 2, 1), done=3, total=7)
        page = Client().get("/").content.decode()
        assert 'data-state="running"' in page and "3 of 7 entries processed (42 %)" in page
        PollRun.objects.update(status=PollRun.Status.DONE)
        assert start_pdb_set() == "begun"
        assert len(broker.sent()) == 1 and rcsb.hits("/rcsbsearch/") == 1
        assert 'id="pdb-start"' not in Client().get("/").content.decode()


def test_unreachable_rcsb_is_said_on_the_home_page_and_in_the_log_then_retried(
    pdb_settings, mmcif_dir, tmp_path, caplog
):
    pdb_settings.RCSB_SEARCH_URL = NOWHERE
    with recording_broker(tmp_path / "broker") as broker:
        with caplog.at_level(logging.WARNING, logger="comparna.ops.pdb_start"):
            assert start_pdb_set() == "unreachable"
        assert broker.sent() == []
        assert any(r.getMessage().startswith(UNREACHABLE) for r in caplog.records)
        page = Client().get("/").content.decode()
        assert 'data-state="unreachable"' in page and UNREACHABLE in page

        with LocalRcsb(fixture_entries(mmcif_dir)) as rcsb:
            pdb_settings.RCSB_SEARCH_URL = rcsb.search_url
            assert start_pdb_set_task() == "sent"  # what beat's schedule runs
        assert [m.task for m in broker.sent()] == ["ingest.tasks.poll_pdb_task"]
        assert UNREACHABLE not in Client().get("/").content.decode()


def test_beat_retries_until_the_set_has_begun():
    entry = collect_schedules()["start-pdb-set"]
    assert entry["task"] == "comparna.ops.tasks.start_pdb_set_task" and entry["options"]["queue"] == "default"
