"""The target browser: search over id, class, source, organism and family; filters; sorting; pages.

Every expectation is recomputed here from the rows themselves, not copied from the view's code.
"""

from __future__ import annotations

import html
import re

import pytest

from comparna.models import ReferenceStructure, Target
from tests.web_data import site_fixture  # noqa: F401 - registers the module-scoped `site` fixture

pytestmark = pytest.mark.django_db


def listed(client, query: str, path: str = "/targets/") -> tuple[list[str], str]:
    """Target ids listed on every page of the browser for ``query`` (follows the "next" links)."""
    ids, url, first = [], f"{path}?{query}", None
    while url:
        response = client.get(url)
        assert response.status_code == 200, url
        page = response.content.decode()
        first = first or page
        body = page[page.index('id="targets-table"') :]
        body = body[body.index("<tbody>") : body.index("</tbody>")]
        ids += [html.unescape(x) for x in re.findall(r'<a href="/targets/\d+/">([^<]+)</a>', body)]
        nxt = re.search(r'<a rel="next" href="([^"]+)"', page)
        url = path + html.unescape(nxt.group(1)) if nxt else None
    return ids, first


@pytest.fixture
def families(site):
    """Family labels on three targets (as the import and the Rfam assignment set them)."""
    strand = list(Target.objects.filter(dataset__slug="rnastrand").order_by("source_id")[:3])
    for target, family, source in zip(
        strand, ("tRNA", "RNaseP_bact_a", "SRP"), ("rfam", "rfam", "dataset"), strict=True
    ):
        Target.objects.filter(pk=target.pk).update(family=family, family_source=source)
    return {"tRNA": strand[0].source_id, "RNaseP_bact_a": strand[1].source_id, "SRP": strand[2].source_id}


def test_search_matches_class_source_and_family_not_only_ids(client, families):
    trna = set(Target.objects.filter(rna_class__icontains="trna").values_list("source_id", flat=True))
    ids, _ = listed(client, "q=tRNA")
    assert set(ids) == trna | {families["tRNA"]} and len(trna) >= 3
    ids, _ = listed(client, "q=rnasep_BACT")
    assert ids == [families["RNaseP_bact_a"]]
    crw = set(Target.objects.filter(source_database="CRW").values_list("source_id", flat=True))
    assert set(listed(client, "q=crw")[0]) == crw
    # two words: both must match (a class word and a source word)
    both = Target.objects.filter(rna_class__icontains="rRNA", source_database="CRW")
    both = set(both.values_list("source_id", flat=True))
    assert set(listed(client, "q=rRNA+CRW")[0]) == both and both
    assert listed(client, "q=ASE_00001")[0] == ["ASE_00001"]


def test_filters_dataset_class_family_length_pseudoknots(client, families):
    pdb = set(Target.objects.filter(dataset__slug="pdb").values_list("source_id", flat=True))
    assert set(listed(client, "dataset=pdb")[0]) == pdb
    assert set(listed(client, "", path="/datasets/pdb/targets/")[0]) == pdb
    cls = set(Target.objects.filter(rna_class="5S rRNA").values_list("source_id", flat=True))
    assert set(listed(client, "class=5S+rRNA")[0]) == cls and cls
    assert listed(client, "family=SRP")[0] == [families["SRP"]]
    assert listed(client, "family=tRNA")[0] == [families["tRNA"]]
    mid = set(Target.objects.filter(length__gte=100, length__lte=200).values_list("source_id", flat=True))
    assert set(listed(client, "min_length=100&max_length=200")[0]) == mid and mid
    pk = set(
        ReferenceStructure.objects.filter(pseudoknotted=True).values_list("target__source_id", flat=True)
    )
    yes, no = set(listed(client, "pseudoknotted=yes")[0]), set(listed(client, "pseudoknotted=no")[0])
    assert yes == pk and pk and not yes & no and len(yes | no) == Target.objects.count()
    combined = {
        t.source_id
        for t in Target.objects.filter(dataset__slug="rnastrand", length__lte=200)
        if t.source_id in pk
    }
    assert set(listed(client, "dataset=rnastrand&max_length=200&pseudoknotted=yes")[0]) == combined


def test_sorting_and_pagination_cover_every_target_once(client, site, monkeypatch):
    from comparna.views.targets import TargetBrowserView

    monkeypatch.setattr(TargetBrowserView, "paginate_by", 10)  # 38 targets: four pages
    expected = sorted(Target.objects.values_list("length", "source_id"), key=lambda x: (-x[0], x[1]))
    ids, page = listed(client, "sort=length&dir=desc")
    assert len(ids) == len(expected) > 25
    lengths = dict(Target.objects.values_list("source_id", "length"))
    assert [lengths[i] for i in ids] == sorted(lengths.values(), reverse=True)
    assert 'aria-sort="descending"' in page and "page 1 of 4" in page
    ids_by_id, _ = listed(client, "")
    assert ids_by_id == sorted(ids_by_id) and sorted(ids_by_id) == sorted(ids)


def test_bad_input_is_reported_not_a_500(client, site):
    junk = "min_length=abc&max_length=99999999999&sort=drop&dir=sideways&q=" + "x" * 500
    response = client.get("/targets/?" + junk)
    assert response.status_code == 200
    page = response.content.decode()
    assert "Minimum length must be a whole number" in page and "Maximum length must be" in page
    assert "No target matches" in page
    response = client.get("/targets/?min_length=300&max_length=10")
    assert "the minimum length is above the maximum" in response.content.decode()
    assert client.get("/targets/?page=999").status_code == 404
    # Unicode digits pass str.isdigit() but not int() (found by tests/e2e/test_api_fuzz.py)
    response = client.get("/targets/?min_length=%C2%B2&max_length=%D9%A3")
    assert response.status_code == 200 and "Maximum length must be" in response.content.decode()
