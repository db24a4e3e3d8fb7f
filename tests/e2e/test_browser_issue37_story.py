"""Issue 37 ("One story on every page"), items 2-7, in headless Chromium on the shared browser stack
(``tests/e2e/browser.py``; items 1, 8 and 9 are in ``test_browser_issue37.py``).

The module's fixture ``story`` adds, through the ORM in one ``manage.py shell`` (:func:`build_story`), what
those items need and the site data lacks, and removes it afterwards (:func:`remove_story`), so the other
browser tests sharing the site see it as before:

- two datasets still filling in, "Story A" (50 targets; subsets "all" and "part", its first 40) and "Story B"
  (30), where the public methods finished predictions over the last 10 minutes and have queued ones
  (:data:`PLAN`, at schedule ranks after the site's other queued work); AliFold(seed), comparative, has
  none (it waits for its inputs); NewFold predicts MidFold's structures except on three targets where it is
  right, so the two share a rank with different mean MCCs (a tie the home page orders as the ranking does);
- a development method (StoryDev) of an approved owner, with a long queue at a low rate (if it were
  counted publicly it would be the slowest method everywhere) and 22 scored targets shared with GoodFold;
- families assigned to 7 of Story A's targets; a dataset snapshot of Story A taken while provisional;
- three real RNA STRAND entries (PDB_00004: one molecule; PDB_00036, PDB_00447: several) imported by the real
  import under a declaration of their own (not into the shared "rnastrand" dataset);
- the background's work done once, as its periodic task does: tallies, live states, table rows, standings.

Screenshots in test-artifacts/screenshots/story-*.png.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import xml.etree.ElementTree as ET

import pytest

from tests.e2e.browser import SHOTS, visit  # the fixtures (live_site, browser): tests/e2e/conftest.py
from tests.e2e.story_data import (
    DATASETS,
    DEV,
    DEV_PLAN,
    FAMILIES_DONE,
    MOLECULES,
    OWNER,
    PART,
    PASSWORD,
    SCOPES,
    SPAN,
)
from tests.e2e.test_browser_issue37 import PHONE, WIDE, new_page

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

@pytest.fixture(scope="module")
def story(live_site):
    stack = live_site["stack"]
    module = "tests.e2e.story_data"
    build = f"import json; from {module} import build_story; print('STORY', json.dumps(build_story()))"
    out = stack.manage("shell", "-c", build).stdout
    info = json.loads(next(line[6:] for line in out.splitlines() if line.startswith("STORY ")))
    try:
        yield info
    finally:
        stack.manage("shell", "-c", f"from {module} import remove_story; remove_story({info['marks']!r})")


def text_of(locator) -> str:
    return " ".join(locator.inner_text().split())


def minutes_of(text: str) -> float:
    """Minutes of an ETA text (comparna.services.progress.eta_text); "done" is 0."""
    text = text.strip()
    if text == "done":
        return 0.0
    if text == "under a minute":
        return 0.5
    m = re.fullmatch(r"(?:≥ )?(?:(\d+) d )?(?:(\d+) h )?(?:(\d+) min)?", text)
    assert m and any(m.groups()), text
    d, h, mins = (int(g or 0) for g in m.groups())
    return (d * 24 + h) * 60 + mins


ETA = re.compile(
    r"ETA: (?P<bound>about|at least) (?P<text>.+?) \(≈ (?P<at>\d{4}-\d\d-\d\d \d\d:\d\d) UTC\), "
    r"when the workers reach the last prediction queued here(?:, on (?P<dataset>.+?))?: every public "
    r"prediction queued before it, of any method or dataset, at each method's seconds per prediction "
    r"\(scaled by target length\) and the workers' throughput, both measured over the last 15 min\."
)


def eta_of(sentence: str) -> dict:
    m = ETA.search(sentence)
    assert m, sentence
    return {**m.groupdict(), "minutes": minutes_of(m["text"])}


def method_etas(pg) -> dict[str, float]:
    """The per-method ETAs of a page's progress table (inside a closed <details>: read as text)."""
    rows = pg.locator("#progress-methods tbody tr")
    out = {}
    for k in range(rows.count()):
        cells = [c.strip() for c in rows.nth(k).locator("td").all_text_contents()]
        eta = None if cells[4] == "no estimate" else minutes_of(cells[4])
        out[rows.nth(k).get_attribute("data-method")] = eta
    return out


def shot(pg, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    pg.screenshot(path=str(SHOTS / f"story-{name}.png"), full_page=True)


def home_with(pg, base: str, predicate, what: str, timeout: float = 45):
    """The home page once ``predicate(pg)`` holds: its overall progress is cached for 30 s in each web
    process, so a page counted before the story may be served for up to that long."""
    deadline = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=timeout)
    visit(pg, base + "/")
    while not predicate(pg):
        assert dt.datetime.now(dt.UTC) < deadline, f"the home page never showed {what}"
        pg.wait_for_timeout(2000)
        visit(pg, base + "/")


def test_one_eta_on_the_home_dataset_and_subset_pages(live_site, browser, story):
    """Item 2: every scope's ETA is when the workers reach its last queued prediction (the sentence the
    stored counts give, ``story["eta"]``) — a subset's at least each of its methods' and at most its
    dataset's, the site's the slowest dataset's, one sentence wherever it is shown — and public figures leave
    the development method out."""
    base = live_site["url"]
    context, pg = new_page(browser, WIDE)
    try:
        subset_eta = {}
        for scope in SCOPES:
            visit(pg, f"{base}/rankings/{scope}/extended/", shot=f"story-ranking-{scope.replace('/', '-')}")
            sentence = text_of(pg.locator("#ranking-eta"))
            assert sentence.startswith(story["eta"][scope]), (scope, sentence)
            eta = subset_eta[scope] = eta_of(sentence)
            # the page's progress box (this subset's targets) says the same sentence
            assert text_of(pg.locator("#progress-eta strong")) == story["eta"][scope]
            per_method = method_etas(pg)
            assert DEV not in per_method and "GoodFold" in per_method, per_method
            # at least each of its methods' (the last of them is reached when the subset is)
            assert all(eta["minutes"] >= m for m in per_method.values() if m is not None), (eta, per_method)
            assert max(m for m in per_method.values() if m is not None) == eta["minutes"]
            assert DEV not in sentence
        dataset_eta = {}
        for slug, (name, _) in DATASETS.items():
            visit(pg, f"{base}/rankings/{slug}/", shot=f"story-dataset-{slug}")
            assert text_of(pg.locator("#progress-eta strong")) == story["eta"][slug]
            eta = dataset_eta[slug] = eta_of(story["eta"][slug])
            assert eta["dataset"] == name
            assert DEV not in method_etas(pg)
            # each section says its subset's sentence; "all" (every target) is the dataset's
            for section in pg.locator("p.ranking-state").all():
                assert eta_of(text_of(section))["minutes"] <= eta["minutes"]
            assert subset_eta[f"{slug}/all"]["minutes"] == eta["minutes"]
        # a subset's ETA is at most its dataset's: "part" ends before Story A's last queued prediction; Story
        # B is queued after Story A: its ETA counts Story A's work too (the pages round to minutes: the
        # service's figures, strictly)
        exact = story["eta_minutes"]
        assert exact["story-a/part"] < exact["story-a"] == exact["story-a/all"] < exact["story-b"]
        assert subset_eta["story-a/part"]["minutes"] <= dataset_eta["story-a"]["minutes"]
        assert dataset_eta["story-b"]["minutes"] >= dataset_eta["story-a"]["minutes"]

        def showing_the_story(p) -> bool:
            eta = p.locator("#progress-eta strong")
            return eta.count() == 1 and "on Story B" in eta.inner_text()

        home_with(pg, base, showing_the_story, "the story's ETA")
        shot(pg, "home-eta")
        site = text_of(pg.locator("#progress-eta strong"))
        # the site's: the slowest dataset's, named
        assert site == story["eta"]["site"] and eta_of(site)["minutes"] == dataset_eta["story-b"]["minutes"]
        # public figures count public methods only: StoryDev's 57 queued and 23 scored predictions are not
        # in the progress (a development method's predictions are its owner's alone)
        counts = text_of(pg.locator("#progress-counts"))
        public = story["public"]
        finished = public["total"] - public["pending"]
        assert counts.startswith(f"{finished} of {public['total']} predictions finished"), counts
        assert DEV not in text_of(pg.locator("#progress"))
        # the glance card of Story A says its ranking's sentence
        card = pg.locator(".glance .card", has_text="Story A · All RNAs")
        assert eta_of(text_of(card.locator("p.small").first)) == subset_eta["story-a/all"]
        assert pg.errors == [] and pg.evaluate("window.__csp") == []
    finally:
        context.close()


def test_provisional_families_and_inputs_said_with_the_ranking_pages_reasons(live_site, browser, story):
    """Item 3: a provisional ranking's reasons are the same words on its ranking page, the dataset's page, the
    home page's card, the dataset snapshot taken meanwhile (list, index, detail, home link); "Families
    pending: N of M targets assigned" while families are missing; the comparative method waits for its inputs
    (not ranked for that reason, and the home page says how many targets have them)."""
    base = live_site["url"]
    n = story["unfinished"]["story-a/all"]
    reason = f"{n} predictions of active methods still unfinished"
    context, pg = new_page(browser, WIDE)
    try:
        visit(pg, f"{base}/rankings/story-a/all/extended/")
        state = pg.locator("#ranking-state")
        assert state.get_attribute("data-state") == "provisional"
        said = re.match(r"Provisional: (.+?)\. ETA", text_of(state)).group(1)
        assert said == reason
        fam = pg.locator("#families-pending")
        total = DATASETS["story-a"][1]
        assert fam.get_attribute("data-assigned") == str(FAMILIES_DONE)
        assert fam.get_attribute("data-total") == str(total)
        assert text_of(fam).startswith(f"Families pending: {FAMILIES_DONE} of {total} targets assigned.")
        waiting = pg.locator('#not-ranked-list li[data-method="AliFold(seed)"] .reason')
        assert waiting.inner_text() == (
            "waiting for its inputs: the Rfam family and homologue alignment of each target")
        ranked = pg.locator("#ranking-table tbody tr").evaluate_all("rows => rows.map(r => r.dataset.method)")
        assert "AliFold(seed)" not in ranked and DEV not in ranked
        # the part has its own count (its share of the queue) in the same words, and its own families note
        visit(pg, f"{base}/rankings/story-a/part/extended/")
        part = story["unfinished"]["story-a/part"]
        assert part < n
        assert text_of(pg.locator("#ranking-state")).startswith(
            f"Provisional: {part} predictions of active methods still unfinished.")
        assert text_of(pg.locator("#families-pending")).startswith(
            f"Families pending: {FAMILIES_DONE} of {PART} targets assigned.")
        # the dataset's page
        visit(pg, f"{base}/rankings/story-a/")
        states = [text_of(p) for p in pg.locator("p.ranking-state").all()]
        assert states[0].startswith(f"Provisional: {reason}. ETA") and states[1].startswith(
            f"Provisional: {part} predictions")
        # the snapshot taken meanwhile: its reason is the ranking's, "when it was taken"
        number = story["archive"]["number"]
        visit(pg, f"{base}/snapshots/story-a/", shot="story-snapshots")
        row = pg.locator(f"table.snapshots tbody tr:has(td:first-child a:text-is('{number}'))")
        assert f"Done — provisional: {reason} when it was taken" in text_of(row)
        visit(pg, f"{base}/snapshots/")
        assert f"Done — provisional: {reason} when it was taken" in text_of(pg.locator("body"))
        visit(pg, f"{base}/snapshots/story-a/{number}/", shot="story-snapshot-detail")
        assert text_of(pg.locator("#snapshot-state")).startswith(f"Provisional: {reason} when it was taken")
        # the home page: the card, the dataset's download link, the comparative methods' inputs
        visit(pg, base + "/", shot="story-home")
        card = pg.locator(".glance .card", has_text="Story A · All RNAs")
        assert card.locator("[data-state]").get_attribute("data-state") == "provisional"
        assert text_of(card.locator("p.small").first).startswith(
            f"Provisional: {reason}. The order can still change.")
        link = f"Snapshot {number} ({story['archive']['date']}, provisional)"
        assert pg.locator("table.data a", has_text=link).count() == 1
        of = sum(story["targets"].values())
        assert text_of(pg.locator("#home-comparative")).endswith(
            f"waiting for their inputs: {story['comparative_ready']} of {of} targets have them so far")
        assert pg.errors == [] and pg.evaluate("window.__csp") == []
    finally:
        context.close()


def test_home_glance_lists_each_rankings_top_five_in_its_own_order(live_site, browser, story):
    """Item 4: each card of "Latest rankings at a glance" lists the first five rows of its ranking page, in
    that order; methods sharing a rank are ordered by mean MCC (Story A: NewFold and MidFold share rank 2,
    NewFold — better on three targets, equal on the rest — first, although MidFold comes first by name)."""
    base = live_site["url"]
    context, pg = new_page(browser, WIDE)
    try:
        visit(pg, base + "/", shot="story-glance")
        cards = []
        for card in pg.locator(".glance .card").all():
            href = card.locator("h3 a").get_attribute("href")
            rows = card.locator("tbody tr[data-method]").evaluate_all(
                "rows => rows.map(r => ({method: r.dataset.method, rank: parseInt(r.cells[0].textContent),"
                " mcc: parseFloat(r.querySelector('.glance-mcc').dataset.value)}))"
            )
            cards.append((href, rows))
        assert any("/rankings/story-a/all/" in href for href, _ in cards)
        tie_by_mcc = 0
        for href, rows in cards:
            assert len(rows) <= 5
            for a, b in zip(rows, rows[1:], strict=False):
                assert (a["rank"], -a["mcc"]) <= (b["rank"], -b["mcc"]), (href, rows)
                tie_by_mcc += a["rank"] == b["rank"] and a["mcc"] > b["mcc"] and a["method"] > b["method"]
            visit(pg, base + href)
            order = pg.locator("#ranking-table tbody tr[data-method]:not([hidden])").evaluate_all(
                "rows => rows.map(r => r.dataset.method)")
            assert [r["method"] for r in rows] == order[:5], (href, rows, order)
        # the story's tie is there, and ordered against the alphabet: the test can tell the two orders apart
        assert tie_by_mcc >= 1, cards
        assert pg.errors == [] and pg.evaluate("window.__csp") == []
    finally:
        context.close()


@pytest.mark.parametrize("viewport", [WIDE, PHONE], ids=["1366", "390"])
def test_owner_sees_its_own_eta_and_a_private_comparison(live_site, browser, story, viewport):
    """Items 5 and 2: the development method's owner page gives its own estimate — its queue at its own rate
    since its first run, weighted by target length, over every dataset — while no public page counts it; the
    private comparison with a public method works from the page's form and is the owner's alone; no owner
    page scrolls sideways at 1366 or 390 px."""
    base, width = live_site["url"], viewport["width"]
    dev = story["dev"]
    context, pg = new_page(browser, viewport)
    try:
        visit(pg, f"{base}/account/login/?next=/account/methods/{dev}/")
        pg.fill("#id_username", OWNER)
        pg.fill("#id_password", PASSWORD)
        pg.click("form.owner-form button[type=submit]")
        pg.wait_for_url(f"{base}/account/methods/{dev}/")
        before = dt.datetime.now(dt.UTC).timestamp()
        response = pg.reload(wait_until="networkidle")
        after = dt.datetime.now(dt.UTC).timestamp()
        # a signed-in owner's pages are never compressed (BREACH: they are not public)
        assert "content-encoding" not in response.headers
        shot(pg, f"owner-method-{width}")
        assert pg.locator("#visibility").inner_text() == "development"
        queued = sum(q for _, _, q in DEV_PLAN.values())
        done = sum(d for _, d, _ in DEV_PLAN.values())
        said = re.fullmatch(
            r"Estimate: done within about (.+) at its own recent rate \((\d+\.\d) predictions/min over the "
            r"last (\d+) min, weighted by target length; (\d+) queued\)\.", text_of(pg.locator("#eta")))
        assert said and int(said[4]) == queued, text_of(pg.locator("#eta"))
        # its rate since its first run (SPAN minutes before the count, plus the time since): the estimate
        # counted then, stretched by that time
        late = [(t - story["now"]) / 60 for t in (before, after)]
        low, high = (story["dev_eta"] * (SPAN + x) / SPAN for x in late)
        assert low - 1 <= minutes_of(said[1]) <= high + 1, (said[1], low, high)
        assert done / (SPAN + late[1]) - 0.05 <= float(said[2]) <= done / (SPAN + late[0]) + 0.05
        assert pg.locator("#total").inner_text() == str(story["dev_predictions"])
        assert pg.evaluate("document.documentElement.scrollWidth") <= width
        # the comparison, from the page's form
        form = pg.locator("#compare-form")
        form.locator("select[name=with]").select_option(label="GoodFold")
        form.locator("select[name=subset]").select_option(label="Story A / All RNAs")
        form.locator("button[type=submit]").click()
        pg.wait_for_load_state("networkidle")
        subset = story["subsets"]["story-a/all"]
        assert f"/account/methods/{dev}/compare/?with={story['good']}&subset={subset}" in pg.url
        shot(pg, f"owner-compare-{width}")
        comp = story["compare"]
        assert text_of(pg.locator("#common")).startswith(
            f"{comp['n']} common targets (scored for both). Mean MCC: {DEV} {comp['dev']:.3f}, "
            f"GoodFold {comp['good']:.3f};")
        assert pg.locator("#compare-rows tbody tr").count() == comp["n"]
        assert pg.locator("#verdict strong").inner_text() == "worse"  # 0.3 of the stems against 0.95
        assert pg.evaluate("document.documentElement.scrollWidth") <= width
        url = pg.url
        visit(pg, base + "/account/", shot=f"story-owner-home-{width}")
        assert DEV in pg.locator("body").inner_text()
        assert pg.evaluate("document.documentElement.scrollWidth") <= width
        assert pg.errors == [] and pg.evaluate("window.__csp") == []
        # the owner's alone: a visitor is sent to sign in, the method has no public page
        anonymous = browser.new_context()
        try:
            answer = anonymous.request.get(url, max_redirects=0)
            assert answer.status == 302 and "/account/login/" in answer.headers["location"]
            assert anonymous.request.get(f"{base}/methods/{dev}/").status == 404
        finally:
            anonymous.close()
    finally:
        context.close()


def test_pages_are_sent_compressed_and_the_feed_is_valid_and_marks_provisional(live_site, browser, story):
    """Item 6 (and item 3's feed): public pages reach the browser gzip-compressed (static files brotli or
    gzip), a page with a CSRF token never; the rankings feed is valid Atom the browser fetches compressed, its
    entries written from the stored standings (the ranks the ranking page shows), a provisional ranking's
    entry marked so with the ranking page's reasons."""
    base = live_site["url"]
    context, pg = new_page(browser, WIDE)
    static = []
    pg.on("response", lambda r: static.append(r) if "/static/" in r.url and r.status == 200 else None)
    try:
        for path in ("/", "/rankings/story-a/all/extended/", "/methods/", "/datasets/"):
            response = pg.goto(base + path, wait_until="networkidle")
            assert response.headers.get("content-encoding") == "gzip", (path, response.headers)
            assert "accept-encoding" in response.headers.get("vary", "").lower()
            body = len(response.body())  # decoded
            assert response.request.sizes()["responseBodySize"] < body / 2, (path, response.request.sizes())
        css = [r for r in static if r.url.endswith(".css")]
        assert css and all(r.headers.get("content-encoding") in ("br", "gzip") for r in css), css
        scripts = [r for r in static if r.url.endswith(".js")]
        assert scripts and all(r.headers.get("content-encoding") in ("br", "gzip") for r in scripts)
        # a page holding a CSRF token is sent as it is
        login = pg.goto(base + "/account/login/", wait_until="networkidle")
        assert login.status == 200 and "content-encoding" not in login.headers
        # the ranking page's ranks of Story A
        visit(pg, f"{base}/rankings/story-a/all/extended/")
        ranks = dict(pg.locator("#ranking-table tbody tr").evaluate_all(
            "rows => rows.map(r => [r.dataset.method, parseInt(r.cells[0].dataset.value)])"))
        said = re.match(r"Provisional: (.+?)\. ETA", text_of(pg.locator("#ranking-state"))).group(1)
        # the feed, fetched by the page
        for feed in ("/feeds/rankings.atom", "/feeds/rankings/story-a.atom"):
            with pg.expect_response(lambda r, feed=feed: r.url == base + feed) as got:
                parsed = pg.evaluate(
                    """async (url) => {
                        const text = await (await fetch(url)).text();
                        const doc = new DOMParser().parseFromString(text, 'application/xml');
                        return {text, error: doc.getElementsByTagName('parsererror').length,
                                root: doc.documentElement.localName, ns: doc.documentElement.namespaceURI};
                    }""",
                    feed,
                )
            response = got.value
            assert response.status == 200
            assert response.headers["content-type"].startswith("application/atom+xml")
            assert response.headers.get("content-encoding") == "gzip", response.headers
            assert parsed["error"] == 0 and (parsed["root"], parsed["ns"]) == ("feed", "http://www.w3.org/2005/Atom")
            atom = "{http://www.w3.org/2005/Atom}"
            entries = {
                e.findtext(f"{atom}title"): e for e in ET.fromstring(parsed["text"]).iter(f"{atom}entry")
            }
            title = next(t for t in entries if t.startswith("Story A / All RNAs / extended"))
            entry = entries[title]
            assert title.startswith("Story A / All RNAs / extended (provisional): "), title
            summary = " ".join(entry.findtext(f"{atom}summary").split())
            assert f"<strong>Provisional</strong>: {said}. Ranks and scores can still change." in summary
            link = entry.find(f"{atom}link").get("href")
            snapshot = story["snapshots"]["story-a/all"]
            assert link.endswith(f"/rankings/story-a/all/extended/?snapshot={snapshot}")
            # every ranked method entered this first ranking: "not ranked → rank r of m", r as on its page
            listed = dict(re.findall(r"<li>(.+?): not ranked → rank (\d+) of \d+</li>", summary))
            assert {m: int(r) for m, r in listed.items()} == ranks, (listed, ranks)
            assert DEV not in parsed["text"]
        assert pg.errors == [] and pg.evaluate("window.__csp") == []
    finally:
        context.close()


def test_pdb_chain_and_multi_molecule_entries_on_the_pages(live_site, browser, story):
    """Item 7: a PDB target's page names its chain; an RNA STRAND entry of one molecule says the source names
    no chain; the entries of several molecules written as one sequence are not targets, and the import's
    outcome on the home page gives that reason in words."""
    base = live_site["url"]
    context, pg = new_page(browser, WIDE)
    try:
        visit(pg, f"{base}/targets/{live_site['pdb_target']}/")
        assert pg.locator("#chain").inner_text() == "A"
        assert re.search(r"PDB entry \w{4}, chain A", text_of(pg.locator("#source")))
        kept = story["strand"]
        assert set(kept) == {"PDB_00004"}  # PDB_00036 and PDB_00447 are several molecules
        visit(pg, f"{base}/targets/{kept['PDB_00004']}/", shot="story-strand-target")
        assert pg.locator("#chain").count() == 0
        assert text_of(pg.locator("#source")) == (
            "PDB entry 1A51 (one RNA molecule of the entry; RNA STRAND does not name its chain)")
        visit(pg, f"{base}/datasets/{MOLECULES}/targets/")
        listed = pg.locator("table a[href^='/targets/']").all_inner_texts()
        assert "PDB_00004" in listed and not {"PDB_00036", "PDB_00447"} & set(listed)
        visit(pg, base + "/", shot="story-imports")
        row = pg.locator(f"tr:has(td:first-child:text-is('{MOLECULES}'))")
        outcome = text_of(row.locator("td.reason"))
        assert "created: 1" in outcome and "excluded: several molecules 2" in outcome, outcome
        assert "multi_molecule" not in text_of(pg.locator("body"))
        assert pg.errors == [] and pg.evaluate("window.__csp") == []
    finally:
        context.close()
