"""One responsive table design (issue 29, item 1), checked in headless Chromium at 1366×768 and 390×844.

On the ranking, unseen, comparison, matrix, families and home pages: no element is wider than the viewport
(nothing sticks out of the page), no data table scrolls inside its box or hides a column without a control
to show it (at 390 px the ranking tables are cards, one per row, every value labelled), and the grids whose
columns are methods or families (the matrix, the per-family table) scroll with a sticky first column and a
zoom control. Screenshots of every page at both sizes go to /tmp/shots/ (and test-artifacts/screenshots/).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.browser import SHOTS

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

SIZES = {"desktop": {"width": 1366, "height": 768}, "phone": {"width": 390, "height": 844}}
OUT = Path("/tmp/shots")

# An unseen ranking row for the page to show (its numbers come from the full ranking; what is checked here is
# the table's layout, not the leakage computation, which tests/django/test_family_pages.py covers).
UNSEEN = """
from comparna.models import Dataset, RankingSnapshot, UnseenRanking
ds = Dataset.objects.get(slug="rnastrand")
full = RankingSnapshot.objects.filter(dataset=ds, subset__slug="all", definition="extended").first()
names = [m["method"] for m in full.report["methods"]]
decl = {"declared": True, "families": ["tRNA", "5S rRNA"], "datasets": ["rnastrand"], "complete": False}
UnseenRanking.objects.filter(inputs_hash="e2e" * 21 + "e").delete()
UnseenRanking.objects.create(
    dataset=ds, definition="extended", seed=1, inputs_hash="e2e" * 21 + "e", inputs={},
    report={**full.report, "full_snapshot": full.pk,
            "full_ranks": {m["method"]: m["rank"] for m in full.report["methods"]},
            "per_method": {n: {"declaration": decl, "unseen_predicted": 12, "seen_by_family": 20,
                               "seen_by_identity": 3} for n in names},
            "not_ranked": {}, "screened_against": ["rnastrand"], "unavailable": []})
"""

# Twelve families over RNA STRAND's targets (none has one in this fixture), so the families heat map is wider
# than a phone and must scroll with its axes in sight; FAMILIES_OFF puts the fixture back.
FAMILIES_ON = """
from comparna.models import Dataset
from comparna.rna.families import FAMILIES
from comparna.services.pages.families import refresh_family_summaries
from comparna.tallies.models import FamilySummary
ds = Dataset.objects.get(slug="rnastrand")
labels = [f.label for f in FAMILIES][:12]
for k, t in enumerate(ds.targets.order_by("pk")):
    t.family = labels[k % len(labels)]
    t.save(update_fields=["family"])
FamilySummary.objects.filter(dataset=ds).delete()
refresh_family_summaries()
"""
FAMILIES_OFF = """
from comparna.models import Dataset
from comparna.services.pages.families import refresh_family_summaries
from comparna.tallies.models import FamilySummary
ds = Dataset.objects.get(slug="rnastrand")
ds.targets.update(family="")
FamilySummary.objects.filter(dataset=ds).delete()
refresh_family_summaries()
"""

# After scrolling a grid's box to its right end: where its first column and its box start (equal when the
# column is sticky), and how far it scrolled.
STICKY = """id => {
  const t = document.getElementById(id), box = t.closest('.table-scroll, .scroll');
  box.scrollLeft = box.scrollWidth;
  const first = t.querySelector('tbody tr > :first-child').getBoundingClientRect();
  return {scrolled: box.scrollLeft, first: first.left, box: box.getBoundingClientRect().left};
}"""

LAYOUT = """() => {
  const width = document.documentElement.clientWidth;
  const scrolls = el => { const s = getComputedStyle(el); return /(auto|scroll)/.test(s.overflowX); };
  const inScrollBox = el => { for (let p = el.parentElement; p && p !== document.body; p = p.parentElement)
      if (scrolls(p) && p.getBoundingClientRect().right <= width + 1) return true; return false; };
  const wide = [];
  for (const el of document.querySelectorAll('body *')) {
    const r = el.getBoundingClientRect();
    // Plotly's text-measuring svg lives off-screen on purpose
    if (r.width === 0 || el.closest('.js-plotly-plot, #js-plotly-tester')) continue;
    if ((r.right > width + 1 || r.left < -1) && !inScrollBox(el))
      wide.push(`${el.tagName}.${el.className} ${Math.round(r.left)}-${Math.round(r.right)}`);
  }
  const tables = [];
  for (const t of document.querySelectorAll('main table')) {
    const grid = t.matches('table.matrix, table.grid');
    const box = grid ? (t.closest('.scroll, .table-scroll') || t) : t;
    const inner = t.scrollWidth > t.clientWidth + 1 || box.scrollWidth > box.clientWidth + 1;
    const hiddenCells = [...t.querySelectorAll('tr:not([hidden]) > td, tr:not([hidden]) > th')]
      .filter(c => getComputedStyle(c).display === 'none' || getComputedStyle(c).visibility === 'hidden');
    const control = t.id && document.querySelector(`[aria-controls="${t.id}"]`);
    const first = t.querySelector('tbody tr > :first-child');
    tables.push({id: t.id || t.className, grid, inner, hidden: hiddenCells.length, control: !!control,
                 sticky: first ? getComputedStyle(first).position === 'sticky' : null,
                 cards: t.classList.contains('cards'),
                 labelled: [...t.querySelectorAll('tbody td')].every(c => c.hasAttribute('data-label')
                                                                      || c.colSpan > 1)});
  }
  return {extra: document.documentElement.scrollWidth - width, wide: wide.slice(0, 8), tables};
}"""


def test_tables_fit_at_1366_and_390_px(live_site, browser):
    base, good, mid = live_site["url"], live_site["good"], live_site["mid"]
    live_site["stack"].manage("shell", "-c", UNSEEN)
    live_site["stack"].manage("shell", "-c", FAMILIES_ON)
    pages = {
        "ranking": "/rankings/rnastrand/all/extended/",
        "unseen": "/unseen/rnastrand/extended/",
        "comparison": f"/rankings/rnastrand/all/extended/compare/{good}/{mid}/",
        "matrix": "/rankings/rnastrand/all/extended/matrix/",
        "families": "/families/rnastrand/extended/",
        "home": "/",
    }
    OUT.mkdir(parents=True, exist_ok=True)
    SHOTS.mkdir(parents=True, exist_ok=True)
    problems = []
    try:
        for size, viewport in SIZES.items():
            phone = size == "phone"
            context = browser.new_context(viewport=viewport, is_mobile=phone, has_touch=phone)
            pg = context.new_page()
            errors = []
            pg.on("pageerror", lambda exc, errors=errors: errors.append(str(exc)))
            for name, path in pages.items():
                response = pg.goto(base + path, wait_until="networkidle")
                assert response.status == 200, path
                if pg.locator("[data-figure]").count():
                    pg.wait_for_function(
                        "[...document.querySelectorAll('[data-figure]')]"
                        ".every(d => d.classList.contains('rendered'))",
                        timeout=20_000,
                    )
                shots = (OUT / f"{name}-{viewport['width']}.png", SHOTS / f"responsive-{name}-{size}.png")
                for shot in shots:
                    pg.screenshot(path=str(shot), full_page=True)
                state = pg.evaluate(LAYOUT)
                where = f"{name} at {viewport['width']} px"
                if state["extra"] > 0 or state["wide"]:
                    problems.append(f"{where}: wider than the viewport by {state['extra']}: {state['wide']}")
                for t in state["tables"]:
                    if t["hidden"] and not t["control"]:
                        problems.append(f"{where}: {t['id']} hides {t['hidden']} cells without a control")
                    if t["grid"]:
                        if t["inner"] and not (t["sticky"] and t["control"]):
                            problems.append(f"{where}: grid {t['id']} scrolls without sticky axis or zoom")
                    elif t["inner"]:
                        problems.append(f"{where}: {t['id']} scrolls inside its box (columns out of sight)")
                if phone and name in ("ranking", "unseen"):
                    table = next(t for t in state["tables"] if t["id"] in ("ranking-table", "unseen-table"))
                    if not (table["cards"] and table["labelled"]):
                        problems.append(f"{where}: {table['id']} is not one labelled card per row")
                    first_card = pg.locator(f"#{table['id']} tbody tr").first
                    first_card.screenshot(path=str(OUT / f"{name}-card-390.png"))
                if name == "families":
                    # the heat map: a column per scored family (of 12), readable cells; on a phone it
                    # scrolls in its box with the method column staying in sight
                    heat = next(t for t in state["tables"] if t["id"] == "family-heatmap")
                    assert pg.locator("#family-heatmap thead th").count() >= 10  # families with scores
                    if phone and not heat["inner"]:
                        problems.append(f"{where}: the 12-family heat map does not scroll in its box")
                    pos = pg.evaluate(STICKY, "family-heatmap")
                    if phone and not (pos["scrolled"] > 100 and abs(pos["first"] - pos["box"]) <= 1):
                        problems.append(f"{where}: heat map's method column not sticky: {pos}")
                    shot = OUT / f"heatmap-{viewport['width']}.png"
                    pg.locator("#family-heatmap").screenshot(path=str(shot))
            if phone:
                # a ranking card holds the rank, the method, wins/losses/draws and the metric with its CI
                pg.goto(base + pages["ranking"], wait_until="networkidle")
                card = pg.locator("#ranking-table tbody tr").first
                labels = card.locator("td").evaluate_all("cs => cs.map(c => c.dataset.label)")
                for label in ("Rank", "Method", "Wins", "Losses", "Draws"):
                    assert any(label.lower() in (x or "").lower() for x in labels), (label, labels)
                assert card.locator("td.ci .range").count() >= 1
                box = card.bounding_box()
                assert box["x"] >= 0 and box["x"] + box["width"] <= 391, box
            assert errors == [], errors
            context.close()
    finally:
        live_site["stack"].manage("shell", "-c", FAMILIES_OFF)
        live_site["stack"].manage("shell", "-c", (
            "from comparna.models import UnseenRanking as U;"
            "U.objects.filter(inputs_hash='e2e'*21+'e').delete()"
        ))
    assert not problems, "\n".join(problems)
