"""Pages of issue 15 on a real ArchiveII slice: per-family heat map and table, the unseen ranking with each
method's rank move, the declared training data on the method page and its staff edit in the admin."""

from __future__ import annotations

import re

import numpy as np
import pytest
from django.contrib.auth.models import User
from django.test import Client

from comparna.models import Score
from comparna.services.leakage import rank_unseen
from comparna.services.pages.families import heat_colour
from predictors.models import Method, TrainingDeclaration
from tests.django.test_leakage import SEED, archiveii, methods  # noqa: F401 (fixtures)

pytestmark = pytest.mark.django_db


def _cell(html: str, method: str) -> str:
    return re.search(rf'<tr data-method="{re.escape(method)}">(.*?)</tr>', html, re.S).group(1)


def test_family_page_shows_each_methods_mean_per_family(archiveii, methods):  # noqa: F811
    page = Client().get(f"/families/{archiveii.slug}/extended/")
    assert page.status_code == 200
    html = page.content.decode()
    # issue 29: the heat map is a grid with sticky axes (a method per row, a family per column)
    grid = re.search(r'class="data compact grid heat" id="family-heatmap">(.*?)</table>', html, re.S).group(1)
    families = re.findall(r'<th class="num" scope="col" title="([^"]+): \d+ targets?">', grid)
    rows = dict(re.findall(r'<tr data-method="([^"]+)">(.*?)</tr>', grid, re.S))
    assert set(rows) == set(methods) and "tRNA" in families
    # issue 27: the page says whether its figures can still change (every prediction here is finished)
    assert 'id="provisional-banner" data-state="settled"' in html
    # the tRNA cell of TrainedOnTRNA is the mean of its tRNA scores, computed here from the rows
    mccs = list(Score.objects.filter(prediction__method_version=methods["TrainedOnTRNA"],
                                     prediction__target__family="tRNA").values_list("mcc", flat=True))
    cells = re.findall(r'<td class="num heat-[^"]+"(?: style="background:(#[0-9A-F]{6});color:#[0-9A-F]{6}")?'
                       r' title="([^"]+)"(?: data-n="(\d+)")?>', rows["TrainedOnTRNA"])
    colour, title, n = cells[families.index("tRNA")]
    assert f"mean MCC {np.mean(mccs):.3f} [" in title and f"n = {len(mccs)}" in title
    # issue 37: the cell shows its n and fades with small n
    assert n == str(len(mccs)) and colour == heat_colour(np.mean(mccs), len(mccs))[0]
    assert len(cells) == len(families)
    assert f"{np.mean(mccs):.3f}" in _cell(html, "TrainedOnTRNA")
    # ArchiveII's family subsets are linked as rankings of the family
    assert f"/rankings/{archiveii.slug}/family-trna/extended/" in html
    # one family as a ranking: every method, by mean MCC on that family's targets
    html = Client().get(f"/families/{archiveii.slug}/extended/?family=tRNA").content.decode()
    table = re.search(r'id="family-ranking-table">(.*?)</table>', html, re.S).group(1)
    order = re.findall(r'<tr data-method="([^"]+)">', table)
    means = {}
    for name in methods:
        values = Score.objects.filter(prediction__method_version__method__name=name,
                                      prediction__target__family="tRNA").values_list("mcc", flat=True)
        means[name] = np.mean(list(values))
    assert order == sorted(means, key=lambda n: (-means[n], n))
    assert Client().get(f"/families/{archiveii.slug}/extended/?family=Viral+RNA").status_code == 404
    assert Client().get("/families/nope/").status_code == 404
    assert Client().get(f"/families/{archiveii.slug}/standard/").status_code == 404


def test_unseen_page_shows_rank_moves_and_undeclared_methods(archiveii, methods):  # noqa: F811
    assert "No unseen ranking" in Client().get(f"/unseen/{archiveii.slug}/").content.decode()
    rankings = Client().get(f"/rankings/{archiveii.slug}/").content.decode()
    assert f'href="/unseen/{archiveii.slug}/"' in rankings
    assert f'href="/families/{archiveii.slug}/"' in rankings
    row, _ = rank_unseen(dataset=archiveii, definition="extended", seed=SEED)
    html = Client().get(f"/unseen/{archiveii.slug}/extended/").content.decode()
    full = row.report["full_ranks"]
    unseen = {m["method"]: m["rank"] for m in row.report["methods"] if m["wins"] + m["losses"] + m["draws"]}
    # issue 27: settled or provisional as its full ranking is; a method with only "?" has no unseen rank
    assert re.search(r'id="provisional-banner" data-state="(settled|provisional)"', html)
    for name in ("TrainedOnTRNA", "Thermo"):
        cells = re.findall(r'<td class="num[^"]*">(.*?)</td>', _cell(html, name), re.S)
        assert cells[0] == str(full[name])
        if name not in unseen:
            assert "not ranked" in cells[1] and cells[2] == "–"
            continue
        assert cells[1] == str(unseen[name])
        move = full[name] - unseen[name]
        assert cells[2] == ("=" if move == 0 else f"▲ {move}" if move > 0 else f"▼ {-move}")
    assert "training data undeclared" in _cell(html, "Undeclared")
    assert "fewer than 10 unseen targets" in _cell(html, "OnArchiveII")


def test_method_page_shows_declared_training_data_and_staff_edit(methods):  # noqa: F811
    thermo = Method.objects.get(name="Thermo")
    html = Client().get(f"/methods/{thermo.pk}/").content.decode()
    assert "Declared training data" in html and "optical melting" in html and "Mathews" in html
    assert "none (melting data only)" in html and "training-edit" not in html
    undeclared = Method.objects.get(name="Undeclared")
    assert "Training data undeclared" in Client().get(f"/methods/{undeclared.pk}/").content.decode()

    staff = Client()
    staff.force_login(User.objects.create_user("curator", password="pw", is_staff=True, is_superuser=True))
    html = staff.get(f"/methods/{thermo.pk}/").content.decode()
    version = methods["Thermo"]
    add_url = f"/admin/predictors/trainingdeclaration/add/?version={version.pk}"
    assert add_url in html.replace("&amp;", "&")
    form = staff.get(add_url).content.decode()
    assert "Turner 2004 nearest-neighbour free energies" in form  # prefilled from the catalogue
    post = {"version": version.pk, "declared": "on", "sources": "Turner 2004 melting data", "families": "[]",
            "datasets": "[]", "unavailable": "[]", "cutoff": "", "complete": "on", "citation": "x"}
    bad = staff.post(add_url, {**post, "families": '["Transfer RNA"]'})
    assert bad.status_code == 200 and "unknown families" in bad.content.decode()
    assert not TrainingDeclaration.objects.filter(version=version).exists()
    ok = staff.post(add_url, {**post, "families": '["tmRNA"]'})
    assert ok.status_code == 302
    saved = TrainingDeclaration.objects.get(version=version)
    assert saved.families == ["tmRNA"] and saved.updated_by.username == "curator"
    html = Client().get(f"/methods/{thermo.pk}/").content.decode()
    assert "tmRNA" in html and "edited by CompaRNA staff" in html


def test_api_targets_carry_and_filter_by_family(archiveii):  # noqa: F811
    data = Client().get("/api/targets/", {"family": "tmRNA", "page_size": 100}).json()
    expected = set(archiveii.targets.filter(family="tmRNA").values_list("source_id", flat=True))
    assert data["count"] == len(expected) > 0
    assert {t["source_id"] for t in data["results"]} == expected
    assert {t["family"] for t in data["results"]} == {"tmRNA"}
