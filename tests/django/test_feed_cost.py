"""The ranking feed is flat in cost and honest about provisional rankings; public pages are compressed (issue
37, items 3 and 6).

Before: ``/feeds/rankings.atom`` loaded the whole report of up to 300 snapshots (about 10 MB each at 100
methods) to find rank changes — 7.7 s median at minute 37 of ``make run`` — and its entries of provisional
rankings were unmarked.
"""

from __future__ import annotations

import gzip
import re
import xml.etree.ElementTree as ET

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from comparna.models import RankingSnapshot
from comparna.owners.feeds import MAX_ENTRIES, changes_between
from comparna.owners.notifications import previous_snapshot, rank_changes
from comparna.services import tallies
from comparna.services.pages.methods import store_method_standings
from comparna.services.pages.ranking_status import snapshot_states, store_ranking_status
from tests.web_data import site_fixture  # noqa: F401 - registers the module-scoped `site` fixture

pytestmark = pytest.mark.django_db
ATOM = "{http://www.w3.org/2005/Atom}"
#: SQL that reads a whole report (a part extracted by the database reads it inside a JSON function, or
#: "report" -> '...' on PostgreSQL).
WHOLE_REPORT = re.compile(r'(?<!\()"comparna_rankingsnapshot"\."report"(?!\s*->)')


def entries(client: Client, url: str = "/feeds/rankings.atom") -> list:
    cache.clear()
    response = client.get(url)
    assert response.status_code == 200
    return ET.fromstring(response.content).findall(f"{ATOM}entry")


def expected_entries() -> list[tuple[int, list[tuple]]]:
    """The feed's entries as the reports say (the old computation: every report read whole)."""
    out = []
    for snap in RankingSnapshot.objects.order_by("-computed_at", "-pk")[:300]:
        changes = rank_changes(snap, previous_snapshot(snap))
        if changes:
            out.append((snap.pk, sorted((c["method"], c["from"], c["to"], c["of"]) for c in changes)))
    return out[:MAX_ENTRIES]


def test_the_feed_reads_stored_ranks_and_says_what_the_reports_say(site):
    client = Client()
    expected = expected_entries()
    assert expected
    for stored in (False, True):  # before the standings are stored (report parts), then from them
        if stored:  # what the background keeps: standings, tallies and the rankings' live states
            assert store_method_standings() > 0
            tallies.refresh_tallies()
            store_ranking_status()
        with CaptureQueriesContext(connection) as ctx:
            got = entries(client)
        assert [int(e.find(f"{ATOM}id").text.split(":")[2]) for e in got] == [pk for pk, _ in expected]
        for e, (pk, changes) in zip(got, expected, strict=True):
            summary = e.find(f"{ATOM}summary").text
            for method, before, after, of in changes:
                was = f"rank {before}" if before is not None else "not ranked"
                assert f"<li>{method}: {was} → rank {after} of {of}</li>" in summary, (pk, method)
        sql = [q["sql"] for q in ctx.captured_queries]
        assert not [q for q in sql if WHOLE_REPORT.search(q)], "a whole report was read"
        if stored:
            # a fixed number of queries, whatever the number of snapshots scanned
            # (a ranking of no method has no standings: its empty list of methods is extracted)
            empty = {s.pk for s in RankingSnapshot.objects.all() if not s.report.get("methods")}
            parts = [q for q in sql if '"comparna_rankingsnapshot"."report"' in q]
            ids = [int(re.search(r'"comparna_rankingsnapshot"\."id" = (\d+)', q)[1]) for q in parts]
            assert set(ids) <= empty
            assert len(sql) <= 12, len(sql)


def test_changes_between_stored_ranks():
    assert changes_between({"A": 1, "B": 2}, {"A": 2, "B": 1, "C": 3}) == [
        {"method": "B", "from": 2, "to": 1, "of": 3},
        {"method": "A", "from": 1, "to": 2, "of": 3},
        {"method": "C", "from": None, "to": 3, "of": 3},
    ]
    assert changes_between({"A": 1}, {"A": 1}) == []


def test_entries_of_provisional_rankings_say_so_with_the_ranking_pages_reasons(site):
    got = entries(Client())
    snaps = {s.pk: s for s in RankingSnapshot.objects.filter(
        pk__in=[int(e.find(f"{ATOM}id").text.split(":")[2]) for e in got])}
    states = snapshot_states(list(snaps.values()))
    assert any(not s["settled"] for s in states.values())
    for e in got:
        state = states[int(e.find(f"{ATOM}id").text.split(":")[2])]
        title, summary = e.find(f"{ATOM}title").text, e.find(f"{ATOM}summary").text
        assert ("(provisional)" in title) == (not state["settled"])
        if not state["settled"]:
            assert f"<strong>Provisional</strong>: {'; '.join(state['reasons'])}" in summary


def test_public_pages_are_compressed_pages_with_a_secret_are_not(site):
    client = Client()
    cache.clear()
    home = client.get("/", HTTP_ACCEPT_ENCODING="gzip")
    assert home.status_code == 200 and home["Content-Encoding"] == "gzip"
    assert b"<h1>" in gzip.decompress(home.content)
    feed = client.get("/feeds/rankings.atom", HTTP_ACCEPT_ENCODING="gzip")
    assert feed["Content-Encoding"] == "gzip"
    # a form: it holds a CSRF token (BREACH), sent as it is
    login = client.get("/account/login/", HTTP_ACCEPT_ENCODING="gzip")
    assert login.status_code == 200 and "Content-Encoding" not in login
    assert b"csrfmiddlewaretoken" in login.content
    # a signed-in visitor's pages
    User.objects.create_user("reader", "r@example.org", "a long enough password")
    client.login(username="reader", password="a long enough password")
    signed_in = client.get("/about/", HTTP_ACCEPT_ENCODING="gzip")
    assert signed_in.status_code == 200 and "Content-Encoding" not in signed_in
