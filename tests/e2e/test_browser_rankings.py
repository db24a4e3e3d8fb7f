"""Rankings and comparisons as a user reads them, in the shared browser stack (``tests/e2e/browser.py``): a
provisional ranking with coverage, an ETA from the measured throughput, the methods not ranked yet and
downloads; a comparison opened from a snapshot's matrix whose common-target count is the matrix cell's."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import re

import pytest

from tests.e2e.browser import SHOTS, ranking_column, visit

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]


def _eta_minutes(text: str) -> float:
    """Minutes of an ETA text of comparna.services.progress.eta_text ("8 min", "1 h 05 min")."""
    if text == "under a minute":
        return 0.5
    m = re.fullmatch(r"(?:≥ )?(?:(\d+) h )?(\d+) min", text)
    assert m, text
    return int(m.group(1) or 0) * 60 + int(m.group(2))


def _computed_eta(stack) -> float:
    """The growing set's ETA as the pages compute it, now (minutes)."""
    out = stack.manage(
        "shell", "-c",
        "from comparna.models import Subset; from comparna.services.progress import prediction_progress as p;"
        "print('ETA', p(subset=Subset.objects.get(dataset__slug='growing', slug='all'))['eta']['minutes'])",
    ).stdout
    return float(next(line[4:] for line in out.splitlines() if line.startswith("ETA ")))


def test_provisional_ranking_with_coverage_eta_and_downloads(live_site, page):
    """A dataset still filling in: the ranking says provisional (and why), each ranked method's coverage,
    the ETA from the measured throughput, the methods not ranked yet with their reason; downloads work."""
    stack, base = live_site["stack"], live_site["url"]
    out = stack.manage(
        "shell",
        "-c",
        "import json; from tests.web_data import build_provisional_dataset as b; r = b();"
        "print('PROV', json.dumps({**r, 'first_start': r['first_start'].timestamp()}))",
    ).stdout
    info = json.loads(next(line[5:] for line in out.splitlines() if line.startswith("PROV ")))
    try:
        low = _computed_eta(stack)
        visit(page, base + "/rankings/growing/all/extended/", shot="ranking-provisional")
        high = _computed_eta(stack)
        state = page.locator("#ranking-state")
        assert state.get_attribute("data-state") == "provisional"
        # 3 methods x 10 targets still queued + NewFold's 40
        assert info["pending"] == 70 and info["finished"] == 90
        assert "Provisional: 70 predictions of active methods still unfinished" in state.inner_text()
        assert "Settled means: no prediction of an active method" in state.inner_text()
        # the ETA (issue 37): when the workers reach the subset's last queued prediction, at the measured
        # costs and throughput (tests/django/test_eta.py checks the formula): the page shows what the
        # service computes at that moment (NewFold's version is costed from its runs on the site's data)
        eta_text = page.locator("#ranking-eta").inner_text()
        found = re.search(r"ETA: (?:about|at least) (.+?) \(≈ .+ UTC\), when the workers reach the last "
                          r"prediction queued here, on Growing set: ", eta_text)
        assert found, eta_text
        eta = found.group(1)
        assert min(low, high) - 1 <= _eta_minutes(eta) <= max(low, high) + 1, (eta, low, high)
        # coverage of every ranked method and the common targets the scores are computed on
        rows = page.locator("#ranking-table tbody tr")
        assert rows.count() == 3
        assert ranking_column(page, 9) == ["30 / 40"] * 3
        assert page.locator("#common-targets").inner_text() == "30"
        # issue 27: the target-level verdict, each rank with its interval, the MCC on the targets that
        # decided the order with its n, and the same number on the method page for the same snapshot
        assert page.locator("#protocol-switch").get_attribute("data-protocol") == "target"
        good = page.locator("#ranking-table tbody tr[data-method=GoodFold]")
        assert re.search(r"\[\d+(–\d+)?\]", good.locator("td").first.inner_text())
        decided = good.locator("td.decided-mcc")
        assert decided.get_attribute("data-n") == "30"
        ranking_mcc = float(decided.get_attribute("data-value"))
        listed = page.locator("#not-ranked-list li")
        reasons = dict(
            zip(
                listed.evaluate_all("l => l.map(x => x.dataset.method)"),
                listed.locator(".reason").all_inner_texts(),
                strict=True,
            )
        )
        assert reasons["NewFold"] == "no prediction finished yet (40 queued or running)"
        assert reasons["AliFold(seed)"].startswith("waiting for its inputs")  # comparative (issue 37)
        # per-method progress with each one's ETA
        page.click("#progress details summary")
        per = page.locator("#progress-methods tr[data-method=GoodFold] td").all_inner_texts()
        assert per[1] == "30 / 40" and per[2] == "10", per
        assert re.fullmatch(r"(≥ )?(\d+ min|under a minute)", per[4]), per
        # the downloads carry the same snapshot
        with page.expect_download() as download:
            page.click("#download-csv")
        assert (
            download.value.suggested_filename
            == f"ranking-growing-all-extended-snapshot{info['snapshot']}.csv"
        )
        json_url = base + page.locator("#download-json").get_attribute("href")
        data = json.loads(page.request.get(json_url).text())
        assert data["snapshot"] == info["snapshot"] and data["common_targets"] == 30
        assert [m["targets_scored"] for m in data["methods"] if m["ranked"]] == [30, 30, 30]
        assert data["settled"] is False and data["state"] == "provisional"
        csv_text = page.request.get(base + page.locator("#download-csv").get_attribute("href")).text()
        assert {row["settled"] for row in csv.DictReader(io.StringIO(csv_text))} == {"False"}
        api = json.loads(page.request.get(f"{base}/api/rankings/{info['snapshot']}/").text())
        assert api["settled"] is False and api["settled_definition_url"].endswith("#provisional")
        # the labelled 2013 view is one click away, never the headline
        page.click("#protocol-2013-link")
        page.wait_for_url("**/?protocol=2013")
        page.wait_for_load_state("load")  # the click navigates: count on the new page, not the old one
        assert page.locator("#protocol-2013-note").count() == 1
        # the method page: the same MCC for the same snapshot, and provisional
        href = good.locator("td.method a").first.get_attribute("href")
        visit(page, base + href, shot="method-provisional")
        row = page.locator(f"#method-rankings tr[data-snapshot='{info['snapshot']}']")
        assert float(row.locator("td.method-mcc").get_attribute("data-value")) == ranking_mcc
        assert row.get_attribute("data-state") == "provisional"
        # the unseen ranking and the families heat map of the dataset say so too
        visit(page, base + "/families/growing/extended/", shot="families-provisional")
        assert page.locator("#provisional-banner").get_attribute("data-state") == "provisional"
        # the home page's card says provisional too
        visit(page, base + "/", shot="home-provisional")
        card = page.locator(".glance .card", has_text="Growing set")
        assert card.locator("[data-state]").get_attribute("data-state") == "provisional"
        # its overall progress is cached for 30 s (per web process): within that it shows the new ETA
        deadline = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=40)
        while page.locator("#progress-eta").count() == 0 and dt.datetime.now(dt.UTC) < deadline:
            page.wait_for_timeout(2000)
            page.reload(wait_until="networkidle")
        assert re.match(r"ETA: (about|at least) ", page.locator("#progress-eta").inner_text())
        page.screenshot(path=str(SHOTS / "home-provisional.png"), full_page=True)
    finally:
        stack.manage("shell", "-c", "from tests.web_data import remove_provisional_dataset as r; r()")


def test_snapshot_comparison_counts_equal_the_matrix_cell(live_site, page):
    """From an older snapshot's matrix to the comparison and through the method picker: the common-target
    count shown is the matrix cell's, and the per-target table has that many rows."""
    base, stack = live_site["url"], live_site["stack"]
    out = stack.manage(
        "shell",
        "-c",
        "from comparna.models import RankingSnapshot as R;"
        "print('SNAPS', *R.objects.filter(dataset__slug='rnastrand', subset__slug='all')"
        ".order_by('computed_at', 'pk').values_list('pk', flat=True))",
    ).stdout
    snaps = next(line.split()[1:] for line in out.splitlines() if line.startswith("SNAPS "))
    oldest, newest = snaps[0], snaps[-1]

    def cell(a: str, b: str) -> tuple[int, str]:
        link = page.locator(
            f'td.common a[title="{a} vs {b}: "], td.common a[title^="{a} vs {b}:"],'
            f' td.common a[title^="{b} vs {a}:"]'
        ).first
        return int(link.inner_text()), link.get_attribute("href")

    visit(
        page, f"{base}/rankings/rnastrand/all/extended/matrix/?snapshot={oldest}", shot="matrix-old-snapshot"
    )
    n_old, href = cell("GoodFold", "MidFold")
    page.goto(base + href, wait_until="networkidle")
    assert f"snapshot={oldest}" in page.url
    assert page.locator("#data-source").get_attribute("data-source") == "snapshot"
    assert int(page.locator("#n-common").inner_text()) == n_old
    assert page.locator("#per-target tbody tr").count() == n_old
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "comparison-old-snapshot.png"), full_page=True)
    # the newest snapshot has more common targets for the same pair: the page follows the snapshot
    visit(page, f"{base}/rankings/rnastrand/all/extended/matrix/?snapshot={newest}")
    n_new, _ = cell("GoodFold", "MidFold")
    assert n_new > n_old
    # the method picker keeps the snapshot: GoodFold against WeakFold in the oldest one
    visit(page, f"{base}/rankings/rnastrand/all/extended/matrix/?snapshot={oldest}")
    n_weak, _ = cell("GoodFold", "WeakFold")
    page.goto(base + href, wait_until="networkidle")
    page.select_option("#method-picker select[name=a]", label="GoodFold")
    page.select_option("#method-picker select[name=b]", label="WeakFold")
    page.click("#method-picker button[type=submit]")
    page.wait_for_load_state("networkidle")
    assert f"snapshot={oldest}" in page.url and "/compare/" in page.url
    assert int(page.locator("#n-common").inner_text()) == n_weak
    # one verdict; the rest is under "Secondary statistics"
    assert page.locator("p.verdict").count() == 1
    assert page.locator("#secondary").count() == 1 and page.locator("#paired-verdict").count() == 1
    # a method the old snapshot never ranked: an empty state, not a table of zeros
    page.select_option("#method-picker select[name=b]", label="NewFold")
    page.click("#method-picker button[type=submit]")
    page.wait_for_load_state("networkidle")
    assert page.locator("#empty-state").count() == 1 and page.locator("#pooled-counts").count() == 0
    page.screenshot(path=str(SHOTS / "comparison-empty.png"), full_page=True)
    assert page.errors == []
