"""Every page renders on factory data; the numbers it shows equal numbers recomputed here independently."""

from __future__ import annotations

import csv
import html
import io
import math
import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from django.db.models import Sum
from django.urls import reverse
from scipy import stats as sps

from comparna.models import RankingSnapshot, Score, Target
from comparna.rna.canonical import structure_from_text
from comparna.rna.metrics import count_pairs
from comparna.rna.ranking import CountsTable, pair_replicate_mccs
from comparna.services.pages.figures import Arc, arc_diagram_svg
from comparna.services.pages.methods import refresh_method_summaries
from predictors.models import Method, Prediction
from tests.web_data import site_fixture  # noqa: F401 - registers the module-scoped `site` fixture

pytestmark = pytest.mark.django_db


def mcc(tp, fn, fp, eps, tn) -> float:
    """Matthews correlation with compatible FPs neutral, written out from SCIENCE.md §2."""
    f = fp - eps
    den = math.sqrt((tp + f) * (tp + fn) * (tn + f) * (tn + fn))
    return 0.0 if den == 0 else (tp * tn - f * fn) / den


def newest(dataset="rnastrand", subset="all", definition="extended") -> RankingSnapshot:
    return RankingSnapshot.objects.filter(
        dataset__slug=dataset, subset__slug=subset, definition=definition
    ).first()


def table_rows(page: str, table_id: str) -> list[list[str]]:
    body = page[page.index(f'id="{table_id}"') :]
    body = body[body.index("<tbody>") : body.index("</tbody>")]
    rows = []
    for tr in re.findall(r"<tr[^>]*>(.*?)</tr>", body, re.S):
        cells = re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", tr, re.S)
        rows.append([html.unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in cells])
    return rows


def scores_of(method: str, *, subset="all", dataset="rnastrand", definition="extended"):
    return Score.objects.filter(
        definition=definition,
        prediction__method_version__method__name=method,
        prediction__target__subsets__slug=subset,
        prediction__target__dataset__slug=dataset,
        prediction__method_version__is_current=True,
    )


def test_every_page_of_the_navigation_renders(client, site):
    home = client.get("/")
    assert home.status_code == 200
    text = home.content.decode()
    for name in ("rankings-index", "methods", "datasets", "about", "api-docs"):
        assert f'href="{reverse(name)}"' in text
    # latest rankings at a glance: the top method of the newest all-subset snapshot of each dataset
    for ds, definition in (("pdb", "standard"), ("rnastrand", "extended")):
        top = newest(ds, "all", definition).report["methods"][0]["method"]
        assert html.escape(top) in text
    # what changed this week: the PDB targets were created now, the RNA STRAND ones a month ago
    assert "14 new targets in" in text and 'new target in <a href="/datasets/rnastrand' not in text
    for url in (
        "/about/",
        "/datasets/",
        "/rankings/",
        "/methods/",
        "/rankings/rnastrand/",
        "/rankings/pdb/",
        "/datasets/pdb/targets/",
    ):
        assert client.get(url).status_code == 200, url


def method_of(cell: str) -> str:
    """The method name of a ranking row's method cell (without the "comp." tag and the "compare" link)."""
    return cell.split()[0]


def ranked_of(snap) -> list[dict]:
    """The snapshot's ranked rows: at least one determined verdict (not only "?")."""
    return [m for m in snap.report["methods"] if m["wins"] + m["losses"] + m["draws"] > 0]


def test_subset_ranking_table_matches_snapshot_and_independent_pooled_scores(client, site):
    snap = newest()
    page = client.get(reverse("subset-rankings", args=["rnastrand", "all", "extended"])).content.decode()
    assert f"Ranking snapshot <strong>#{snap.pk}</strong>" in page
    assert snap.inputs_hash[:12] in page
    rows = table_rows(page, "ranking-table")
    ranked = ranked_of(snap)
    assert [method_of(r[1]) for r in rows] == [m["method"] for m in ranked]
    # the common targets: every ranked method has a score there (computed here from the score rows)
    common = set.intersection(
        *(set(scores_of(m["method"]).values_list("prediction__target_id", flat=True)) for m in ranked)
    )
    assert re.search(r'id="common-targets">(\d+)<', page).group(1) == str(len(common))
    total = Target.objects.filter(subsets__slug="all", dataset__slug="rnastrand").count()
    verdicts = snap.report["verdicts"]
    for row, expected in zip(rows, ranked, strict=True):
        rank_cell, name, wins, losses, draws, unknown, decided, sens, ppv, coverage, mean_ci = row
        name = method_of(name)
        # the rank with its 95 % interval (family bootstrap), e.g. "2= [1–4]"
        rank, *interval = rank_cell.split(" ", 1)
        low, high = expected["rank_low"], expected["rank_high"]
        assert interval == [f"[{low}]" if low == high else f"[{low}–{high}]"]
        assert (int(rank.rstrip("=")), int(wins), int(losses), int(draws), int(unknown)) == (
            expected["rank"],
            expected["wins"],
            expected["losses"],
            expected["draws"],
            expected["unknown"],
        )
        assert rank.endswith("=") == (sum(m["rank"] == expected["rank"] for m in ranked) > 1)
        on_common = scores_of(name).filter(prediction__target_id__in=common)
        agg = on_common.aggregate(*(Sum(f) for f in ("tp", "fn", "fp", "fp_compatible", "tn")))
        tp, fn, fp, eps, tn = (agg[f"{f}__sum"] for f in ("tp", "fn", "fp", "fp_compatible", "tn"))
        # "MCC (n)": the mean per-target MCC on exactly the targets that decided the place — the union of the
        # method's pairwise sets with a win, loss or draw (issue 27), computed here from the score rows
        own = set(scores_of(name).values_list("prediction__target_id", flat=True))
        decided_ids = set()
        for other, verdict in verdicts[name].items():
            if verdict in "+-=":
                decided_ids |= own & set(scores_of(other).values_list("prediction__target_id", flat=True))
        decided_scores = scores_of(name).filter(prediction__target_id__in=decided_ids)
        values = list(decided_scores.values_list("mcc", flat=True))
        assert decided == f"{np.mean(values):.3f} (n = {len(values)})"
        assert sens == f"{tp / (tp + fn):.3f}"
        assert snap.report["common_scores"][name]["mcc"] == pytest.approx(mcc(tp, fn, fp, eps, tn), abs=1e-9)
        assert ppv == f"{tp / (tp + fp - eps):.3f}"
        assert coverage == f"{scores_of(name).count()} / {total}"
        per_target = np.array(on_common.values_list("mcc", flat=True))
        mean, low, high, c_low, c_high = (float(x) for x in re.findall(r"-?\d\.\d{3}", mean_ci))
        # no Rfam family assigned here: every target is its own sequence cluster, so resampling clusters is
        # resampling targets with the same draws
        assert (c_low, c_high) == (low, high) and "families: [" in mean_ci
        assert mean == pytest.approx(per_target.mean(), abs=6e-4)
        # an independent percentile bootstrap (other random stream): the bounds agree to Monte-Carlo error
        rng = np.random.default_rng(12345)
        boot = per_target[rng.integers(0, per_target.size, (10_000, per_target.size))].mean(axis=1)
        lo, hi = np.percentile(boot, [2.5, 97.5])
        assert low == pytest.approx(lo, abs=0.01) and high == pytest.approx(hi, abs=0.01)
    assert 'data-figure="rank-history"' in page and "plotly/plotly.min.js" in page


def test_ranking_sorting_and_kind_filter_work_without_javascript(client, site):
    url = reverse("subset-rankings", args=["rnastrand", "all", "extended"])
    snap = newest()
    page = client.get(url + "?sort=mcc&dir=desc").content.decode()
    names = [method_of(r[1]) for r in table_rows(page, "ranking-table")]
    expected = sorted(ranked_of(snap), key=lambda m: (m["decided_mcc"], m["method"]), reverse=True)
    assert names == [m["method"] for m in expected]
    # the header of the sorted column links to the opposite direction
    assert 'href="?sort=mcc&amp;dir=asc&amp;kind=all"' in page
    comparative = client.get(url + "?kind=comparative").content.decode()
    names = [method_of(r[1]) for r in table_rows(comparative, "ranking-table")]
    kinds = dict(Method.objects.values_list("name", "input_kind"))
    assert names and all(kinds[n] != "single" for n in names)
    single = client.get(url + "?kind=single").content.decode()
    names = [method_of(r[1]) for r in table_rows(single, "ranking-table")]
    assert names and all(kinds[n] == "single" for n in names)
    assert len(table_rows(single, "ranking-table")) + len(table_rows(comparative, "ranking-table")) == len(
        ranked_of(snap)
    )
    # an older snapshot can be shown by id; rank history has all three dated snapshots
    oldest = RankingSnapshot.objects.filter(subset__slug="all", dataset__slug="rnastrand").last()
    older = client.get(url + f"?snapshot={oldest.pk}").content.decode()
    assert f"#{oldest.pk}</strong>" in older and "older snapshot" in older
    assert client.get(url + "?snapshot=999999").status_code == 404
    assert client.get(url + "?snapshot=abc").status_code == 404


def test_pairwise_matrix_cells_verdicts_and_common_targets(client, site):
    snap = newest()
    page = client.get(reverse("ranking-matrix", args=["rnastrand", "all", "extended"])).content.decode()
    names = [m["method"] for m in snap.report["methods"]]
    ok = {
        name: set(
            Prediction.objects.filter(
                method_version__method__name=name,
                status="ok",
                method_version__is_current=True,
                target__subsets__slug="all",
                target__dataset__slug="rnastrand",
            ).values_list("target_id", flat=True)
        )
        for name in names
    }
    pks = dict(Method.objects.values_list("name", "pk"))
    for a in names:
        for b in names:
            if a == b:
                continue
            link = reverse("method-comparison", args=["rnastrand", "all", "extended", pks[a], pks[b]])
            m = re.search(re.escape(link) + r'\?snapshot=\d+" title="[^"]*">([^<]*)</a>', page)
            assert m, (a, b)
            value = m.group(1)
            if names.index(b) > names.index(a):
                assert value.replace("−", "-") == snap.report["verdicts"][a][b]
            else:
                assert int(value) == len(ok[a] & ok[b])


def test_comparison_page_counts_test_and_paired_statistics(client, site):
    snap = newest()
    a, b = Method.objects.get(name="GoodFold"), Method.objects.get(name="MidFold")
    url = reverse("method-comparison", args=["rnastrand", "all", "extended", a.pk, b.pk])
    page = client.get(url).content.decode()
    # pooled counts: re-score every common prediction from its pairs with the metrics module
    preds = {
        m.name: {
            p.target_id: p
            for p in Prediction.objects.filter(
                method_version__method=m,
                status="ok",
                target__subsets__slug="all",
                target__dataset__slug="rnastrand",
            ).select_related("target")
        }
        for m in (a, b)
    }
    common = sorted(set(preds[a.name]) & set(preds[b.name]))
    rows = dict((r[0], r[1:]) for r in table_rows(page, "pooled-counts"))
    per_target = {}
    for m in (a, b):
        total = np.zeros(7, dtype=np.int64)
        per_target[m.name] = []
        for tid in common:
            p = preds[m.name][tid]
            ref = structure_from_text(p.target.length, p.target.references.get(definition="extended").pairs)
            c = count_pairs(ref, structure_from_text(p.target.length, p.pairs))
            total += [c.tp, c.fn, c.fp, c.fp_inconsistent, c.fp_contradicting, c.fp_compatible, c.tn]
            per_target[m.name].append(mcc(c.tp, c.fn, c.fp, c.fp_compatible, c.tn))
        shown = rows[m.name]
        assert [int(x) for x in shown[:7]] == total.tolist()
        assert shown[7] == f"{mcc(total[0], total[1], total[2], total[5], total[6]):.3f}"
    # the ranking test, reproduced with scipy on the engine's replicate MCCs for this pair
    names = sorted([a.name, b.name])
    targets = list(snap.subset.targets.order_by("source_id").values_list("pk", "source_id"))
    counts = np.zeros((2, len(targets), 5), dtype=np.int64)
    present = np.zeros((2, len(targets)), dtype=bool)
    for k, (tid, _) in enumerate(targets):
        for mi, name in enumerate(names):
            s = Score.objects.filter(
                prediction__target_id=tid, prediction__method_version__method__name=name
            ).first()
            if s is not None:
                counts[mi, k] = [s.tp, s.fn, s.fp, s.fp_compatible, s.tn]
                present[mi, k] = True
    x, y, n = pair_replicate_mccs(
        CountsTable(tuple(names), tuple(t for _, t in targets), counts, present), 0, 1, 11
    )
    assert n == len(common)
    # the CompaRNA 2013 protocol's test, shown labelled beside the verdict
    shown_2013 = float(re.search(r'id="protocol-2013-pvalue" data-value="([^"]+)"', page).group(1))
    assert shown_2013 == pytest.approx(sps.wilcoxon(x, y).pvalue, rel=1e-9)
    # the verdict's test (issue 27): Wilcoxon signed-rank on the per-target MCC differences; no family here,
    # so every target is its own unit and the exact permutation distribution of the signed-rank sum is
    # scipy's permutation test over all 2^n sign flips
    d = np.array(per_target[a.name]) - np.array(per_target[b.name])
    d = d[d != 0]
    signed = np.sign(d) * sps.rankdata(np.abs(d))
    exact = sps.permutation_test(
        (signed,), lambda v, axis: np.sum(v, axis=axis), permutation_type="samples",
        n_resamples=np.inf if d.size <= 20 else 200_000, alternative="two-sided", random_state=0,
    ).pvalue
    shown_p = float(re.search(r'id="test-pvalue" data-value="([^"]+)"', page).group(1))
    assert shown_p == pytest.approx(exact, rel=1e-9 if d.size <= 20 else 0.05)
    assert shown_p == pytest.approx(snap.report["p_values"][a.name][b.name], rel=1e-12)
    verdict = re.search(r'id="test-verdict">([^<]+)<', page).group(1).replace("−", "-")
    assert verdict == snap.report["verdicts"][a.name][b.name]
    # paired statistics against scipy
    d = np.array(per_target[a.name]) - np.array(per_target[b.name])
    shown_diff = float(re.search(r'id="paired-diff" data-value="([^"]+)"', page).group(1))
    assert shown_diff == pytest.approx(d.mean(), abs=1e-9)
    t = sps.ttest_rel(per_target[a.name], per_target[b.name])
    assert f"t = {t.statistic:.3f}" in page
    z = sps.norm.ppf(0.8) + sps.norm.ppf(0.975)
    assert re.search(r'id="paired-n-required">(\d+)', page).group(1) == str(
        math.ceil(d.var(ddof=1) * z * z / 0.02**2)
    )
    assert 'data-figure="scatter"' in page
    # per-length-bin table: the target counts per bin
    bins = table_rows(page, "by-length")
    lengths = [preds[a.name][tid].target.length for tid in common]
    expected_bins = {"≤ 200 nt": sum(x <= 200 for x in lengths), "201–800 nt": sum(x > 200 for x in lengths)}
    assert {r[0]: int(r[1].split()[0]) for r in bins} == {k: v for k, v in expected_bins.items() if v}
    # the CSV behind the page
    data = client.get(url + "data.csv")
    assert data["Content-Type"].startswith("text/csv")
    table = list(csv.DictReader(io.StringIO(data.content.decode())))
    assert len(table) == len(common)
    assert sum(int(r["a_fp_compatible"]) for r in table) == int(rows[a.name][5])
    assert (
        client.get(
            reverse("method-comparison", args=["rnastrand", "all", "extended", a.pk, a.pk])
        ).status_code
        == 404
    )


def test_method_page_spec_failures_performance_and_pr_curve(client, site):
    refresh_method_summaries()  # the performance and PR figures, computed in the background
    good = Method.objects.get(name="GoodFold")
    page = client.get(reverse("method-detail", args=[good.pk])).content.decode()
    assert "goodfold --input {input} --out {output}" in html.unescape(page)
    assert 'data-figure="method-history"' in page and 'data-figure="pr-curve"' in page
    # PR baseline P/(P+N) pooled over the targets with probabilities, RNA STRAND set
    preds = Prediction.objects.filter(
        method_version__method=good, probabilities__isnull=False, target__dataset__slug="rnastrand"
    ).select_related("target")
    positives = sum(p.target.references.get().n_pairs for p in preds)
    candidates = sum(p.target.length * (p.target.length - 1) // 2 for p in preds)
    pr_rows = table_rows(page, "pr-table")
    strand_row = next(r for r in pr_rows if r[0].startswith("RNA STRAND"))
    assert int(strand_row[1]) == preds.count()
    assert strand_row[3] == f"{positives / candidates:.4f}"
    assert 0 < float(strand_row[2]) <= 1
    # one stated precision for curves and the binary point (issue 14)
    assert 'id="pr-precision"' in page and "precision = TP/(TP+FP)" in page and "exact integral" in page
    # performance by length: counts per bin
    mid = Method.objects.get(name="MidFold")
    page = client.get(reverse("method-detail", args=[mid.pk])).content.decode()
    failed = Prediction.objects.filter(method_version__method=mid, status__in=["failed", "timeout"])
    assert failed.exists()
    assert len(table_rows(page, "failures-table")) == failed.count()
    for p in failed:
        assert p.target.source_id in page
    assert "This method stores no base-pair probabilities." in page


def test_target_page_reference_drawing_and_predictions(client, site):
    pdb_target = Target.objects.filter(dataset__slug="pdb").order_by("source_id").first()
    page = client.get(reverse("target-detail", args=[pdb_target.pk])).content.decode()
    assert f"https://www.rcsb.org/structure/{pdb_target.pdb_id}" in page
    assert str(pdb_target.release_date) in page
    ext = pdb_target.references.get(definition="extended")
    std = pdb_target.references.get(definition="standard")
    figure = page[page.index('class="arcs ref-extended"') :]
    figure = figure[: figure.index("</figure>")]
    assert figure.count('class="ref standard"') == std.n_pairs
    assert figure.count('class="ref extended"') == ext.n_pairs - std.n_pairs
    # every scored prediction appears with its score, drawn with one lower arc per predicted pair
    for p in pdb_target.predictions.filter(status="ok"):
        s = p.scores.get(definition="standard")
        assert f"{s.mcc:.3f}" in page
    strand = Target.objects.filter(dataset__slug="rnastrand").first()
    page = client.get(reverse("target-detail", args=[strand.pk])).content.decode()
    assert "rcsb.org" not in page and strand.sequence in page
    assert client.get(reverse("target-detail", args=[10**9])).status_code == 404


def test_datasets_page_sizes(client, site):
    page = client.get(reverse("datasets")).content.decode()
    for ds in site["datasets"]:
        section = page[page.index(f'id="dataset-{ds.slug}"') :]
        body = section[: section.index("</section>")]
        for subset in ds.subsets.all():
            assert re.search(
                rf"<td>{re.escape(html.escape(subset.name))}</td>.*?"
                rf"<td class=\"num\">{subset.targets.count()}</td>",
                body,
                re.S,
            )


def test_arc_diagram_is_well_formed_svg_with_one_path_per_arc():
    arcs = [Arc(1, 10, "ref standard", "1–10 <G-C>"), Arc(2, 9, "ref extended", "a & b")]
    lower = [Arc(3, 8, "pred fp")]
    svg = arc_diagram_svg(12, arcs, lower, sequence="GGAAAUUUCCAA")
    root = ET.fromstring(svg)
    paths = root.findall("{http://www.w3.org/2000/svg}path")
    assert len(paths) == 3
    assert {p.get("class") for p in paths} == {"ref standard", "ref extended", "pred fp"}
    titles = [t.text for t in root.iter("{http://www.w3.org/2000/svg}title")]
    assert "1–10 <G-C>" in titles and "a & b" in titles
    # upper arcs sweep above the backbone, lower ones below
    first_y = float(paths[0].get("d").split(",")[1].split()[0])
    assert paths[0].get("d").endswith(f",{first_y:.1f}") and " 0 0,1 " in paths[0].get("d")
    assert " 0 0,0 " in paths[2].get("d")
