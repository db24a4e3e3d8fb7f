"""One definition of each number, under one name on every surface (issue 37): the same method row of the same
snapshot read on the ranking page (its cell and the cell's tooltip), the home page, the dataset's rankings,
the method page, the CSV and JSON downloads, the API's report and list and the API schema gives the same
"mean MCC" (the mean per-target MCC on the targets that decided the place) with the same n; the pooled MCC is
called "pooled MCC" wherever it is shown, and no column anywhere is a bare "MCC"."""

from __future__ import annotations

import csv
import html
import io
import json
import re

import pytest
from django.urls import reverse

from comparna.models import RankingSnapshot
from predictors.models import Method
from tests.web_data import site_fixture  # noqa: F401 - registers the module-scoped `site` fixture

pytestmark = pytest.mark.django_db

ARGS = ["rnastrand", "all", "extended"]
METHOD = "GoodFold"


def newest() -> RankingSnapshot:
    return (
        RankingSnapshot.objects.filter(dataset__slug="rnastrand", subset__slug="all", definition="extended")
        .order_by("-computed_at", "-pk")
        .first()
    )


def headers(page: str) -> list[str]:
    """The text of every table header cell of a page (tags and extra spaces removed)."""
    cells = re.findall(r"<th\b[^>]*>(.*?)</th>", page, flags=re.S)
    return [re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", "", c))).strip() for c in cells]


def row_of(page: str, method: str) -> str:
    return re.search(rf'<tr[^>]*data-method="{re.escape(method)}"[^>]*>(.*?)</tr>', page, flags=re.S).group(1)


def test_the_mean_mcc_is_one_number_under_one_name_everywhere(client, site):
    snap = newest()
    row = next(r for r in snap.report["methods"] if r["method"] == METHOD)
    mean, n = row["decided_mcc"], row["decided_targets"]
    assert mean is not None and n > 0
    shown = f"{mean:.3f}"

    # the ranking page: the column is "Mean MCC (n)", the cell the number and its n, the tooltip both
    page = client.get(reverse("subset-rankings", args=ARGS) + f"?snapshot={snap.pk}").content.decode()
    assert "Mean MCC (n)" in headers(page) and "MCC" not in headers(page)
    cell = re.search(r'<td class="num decided-mcc"([^>]*)>(.*?)</td>', row_of(page, METHOD), flags=re.S)
    attrs, text = cell.group(1), re.sub(r"<[^>]+>", "", cell.group(2))
    assert float(re.search(r'data-value="([^"]+)"', attrs).group(1)) == pytest.approx(mean)
    assert re.search(r'data-n="(\d+)"', attrs).group(1) == str(n)
    assert re.sub(r"\s+", " ", text).strip() == f"{shown} (n = {n})"
    tooltip = html.unescape(re.search(r'title="([^"]+)"', attrs).group(1))
    assert tooltip == f"Mean MCC {shown} on the n = {n} targets that decided {METHOD}'s place"

    # the CSV: one column per definition, named by it; the JSON download: the same names and values
    body = client.get(reverse("ranking-download", args=[*ARGS, "csv"]) + f"?snapshot={snap.pk}").content
    rows = {r["method"]: r for r in csv.DictReader(io.StringIO(body.decode()))}
    header = next(csv.reader(io.StringIO(body.decode())))
    assert [c for c in header if "mcc" in c] == [
        "mean_mcc",
        "mean_mcc_n",
        "pooled_mcc_common",
        "pooled_mcc_own_targets",
        "common_mean_mcc",
        "common_mean_mcc_low",
        "common_mean_mcc_high",
        "common_mean_mcc_n",
    ]
    assert float(rows[METHOD]["mean_mcc"]) == pytest.approx(mean, abs=1e-6) and rows[METHOD][
        "mean_mcc_n"
    ] == str(n)
    common = snap.report["common_scores"][METHOD]
    assert float(rows[METHOD]["pooled_mcc_common"]) == pytest.approx(common["mcc"], abs=1e-6)
    assert float(rows[METHOD]["pooled_mcc_own_targets"]) == pytest.approx(row["mcc"], abs=1e-6)
    # three different numbers: that is why each has its own name
    assert len({rows[METHOD][c] for c in ("mean_mcc", "pooled_mcc_common", "pooled_mcc_own_targets")}) == 3
    data = json.loads(
        client.get(reverse("ranking-download", args=[*ARGS, "json"]) + f"?snapshot={snap.pk}").content
    )
    exported = next(m for m in data["methods"] if m["method"] == METHOD)
    assert (exported["mean_mcc"], exported["mean_mcc_n"]) == (mean, n)
    assert exported["pooled_mcc_common"] == common["mcc"] and exported["pooled_mcc_own_targets"] == row["mcc"]
    # the old names stay in the JSON, with the same values, and are listed as deprecated
    assert data["deprecated_fields"]["decided_mcc"] == "mean_mcc"
    assert all(exported[old] == exported[new] for old, new in data["deprecated_fields"].items())

    # the API: the snapshot's report and the list, under the same names
    api = client.get(reverse("api-ranking-detail", args=[snap.pk])).json()
    api_row = next(m for m in api["methods"] if m["method"] == METHOD)
    assert (api_row["mean_mcc"], api_row["mean_mcc_n"]) == (mean, n)
    assert api_row["pooled_mcc_common"] == common["mcc"] and api_row["pooled_mcc_own_targets"] == row["mcc"]
    listed = client.get(
        reverse("api-ranking-list") + "?dataset=rnastrand&subset=all&definition=extended"
    ).json()
    entry = next(e for e in listed["results"] if e["id"] == snap.pk)
    listed_row = next(m for m in entry["methods"] if m["method"] == METHOD)
    assert (listed_row["mean_mcc"], listed_row["mean_mcc_n"]) == (mean, n)
    # the schema names and defines them, and marks the old names deprecated
    schema = client.get(reverse("api-schema") + "?format=json").json()["components"]["schemas"]
    for name in ("RankingRow", "RankingSummaryRow"):
        props = schema[name]["properties"]
        assert props["mean_mcc"]["description"].startswith("Mean MCC: the mean per-target MCC on exactly")
        assert props["pooled_mcc_own_targets"]["description"].startswith("Pooled MCC:")
        assert all(props[old].get("deprecated") for old in ("decided_mcc", "decided_targets", "mcc"))

    # the dataset's rankings, the home page and the method page: the same number, the same name
    rankings = client.get(reverse("dataset-rankings", args=["rnastrand"])).content.decode()
    assert "Mean MCC (n)" in headers(rankings) and "MCC" not in headers(rankings)
    # (one table per subset: the "All RNAs" one shows this snapshot)
    found = re.findall(rf'<tr data-method="{METHOD}">(.*?)</tr>', rankings, flags=re.S)
    assert any(f'{shown} <span class="small">({n})</span>' in r for r in found), found
    home = client.get(reverse("home")).content.decode()
    assert "Mean MCC (n)" in headers(home) and "MCC" not in headers(home)
    method = Method.objects.get(name=METHOD)
    method_page = client.get(reverse("method-detail", args=[method.pk])).content.decode()
    assert "Mean MCC" in headers(method_page) and "MCC" not in headers(method_page)
    standing = re.search(
        rf'<tr data-snapshot="{snap.pk}"[^>]*>.*?data-value="([^"]+)">.*?<td class="num">(\d+)</td>',
        method_page,
        flags=re.S,
    )
    assert float(standing.group(1)) == pytest.approx(mean) and standing.group(2) == str(n)

    # /about/ defines both names
    about = client.get(reverse("about")).content.decode()
    assert 'id="mean-mcc">mean MCC (n)</strong> is the mean per-target MCC on exactly' in about
    assert 'id="pooled-mcc">pooled MCC</strong>' in about


def test_the_pooled_mcc_is_called_pooled_mcc(client, site):
    snap = newest()
    page = client.get(
        reverse("subset-rankings", args=ARGS) + f"?snapshot={snap.pk}&protocol=2013"
    ).content.decode()
    assert "Pooled MCC" in headers(page) and "MCC" not in headers(page)
    cell = re.search(r'<td class="num pooled-mcc" data-value="([^"]+)" title="([^"]+)"', row_of(page, METHOD))
    assert float(cell.group(1)) == pytest.approx(snap.report["common_scores"][METHOD]["mcc"])
    assert cell.group(2) == "Pooled MCC on the common targets"


def test_the_comparison_page_calls_it_pooled_mcc(client, site):
    snap = newest()
    good, mid = Method.objects.get(name="GoodFold"), Method.objects.get(name="MidFold")
    compare = client.get(
        reverse("method-comparison", args=[*ARGS, good.pk, mid.pk]) + f"?snapshot={snap.pk}"
    ).content.decode()
    assert "Pooled MCC" in headers(compare) and "MCC" not in headers(compare)
