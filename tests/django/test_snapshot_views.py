"""Snapshot pages and downloads: checksum, ETag, ranges (resume, 416, If-Range), through Django's test client
and a real HTTP server; the pair-comparison CSV."""

from __future__ import annotations

import csv
import hashlib
import io

import pytest
import requests
from django.http import HttpResponse
from django.urls import include, path

from comparna.models import Score
from comparna.snapshots.archive import parse_manifest, verify_archive
from comparna.snapshots.lifecycle import make_snapshot_if_changed, snapshot_path
from comparna.snapshots.views import parse_range
from tests.django.test_snapshot_service import build_scored_dataset

# A tests-only URL configuration: the project's pages when they import, stand-ins for the names the base
# template links to otherwise, and the snapshot URLs under snapshots/ as the project mounts them.
try:
    from comparna import urls as project_urls

    urlpatterns = [path("", include(project_urls.urlpatterns))]
except Exception:  # noqa: BLE001 - the project's views are being rewritten elsewhere
    from django.contrib import admin

    def _stub(request, *args, **kwargs):
        return HttpResponse("stub")

    urlpatterns = [
        path("", _stub, name="home"),
        path("rankings/<slug:dataset>/", _stub, name="dataset-rankings"),
        path("about/", _stub, name="about"),
        path("admin/", admin.site.urls),
    ]
urlpatterns.append(path("snapshots/", include("comparna.snapshots.urls")))

URLS = "tests.django.test_snapshot_views"


@pytest.fixture
def snapshot(settings, tmp_path):
    settings.SNAPSHOT_DIR = tmp_path / "snapshots"
    dataset = build_scored_dataset()
    return make_snapshot_if_changed(dataset, background=False)


def body(response) -> bytes:
    return b"".join(response.streaming_content) if response.streaming else response.content


@pytest.mark.parametrize(
    ("header", "size", "expected"),
    [
        ("bytes=0-99", 1000, (0, 99)),
        ("bytes=500-", 1000, (500, 999)),
        ("bytes=-100", 1000, (900, 999)),
        ("bytes=-5000", 1000, (0, 999)),
        ("bytes=990-5000", 1000, (990, 999)),
        ("bytes=1000-", 1000, "unsatisfiable"),
        ("bytes=-0", 1000, "unsatisfiable"),
        ("bytes=5-2", 1000, None),
        ("bytes=0-1,5-6", 1000, None),
        ("items=0-1", 1000, None),
    ],
)
def test_parse_range(header, size, expected):
    assert parse_range(header, size) == expected


@pytest.mark.django_db
@pytest.mark.urls(URLS)
def test_page_and_download_through_the_test_client(client, snapshot, tmp_path):
    url = f"/snapshots/snapset/{snapshot.number}/"
    page = client.get(url)
    assert page.status_code == 200
    html = page.content.decode()
    assert snapshot.sha256 in html and str(snapshot.size) in html and "download" in html
    assert client.get("/snapshots/snapset/").status_code == 200
    assert client.get("/snapshots/snapset/99/").status_code == 404

    full = client.get(url + "download")
    assert full.status_code == 200
    data = body(full)
    assert len(data) == int(full["Content-Length"]) == snapshot.size
    assert hashlib.sha256(data).hexdigest() == snapshot.sha256
    assert full["ETag"] == f'"{snapshot.sha256}"' and full["Accept-Ranges"] == "bytes"
    assert "attachment" in full["Content-Disposition"]
    # The downloaded archive verifies against its own MANIFEST.
    copy = tmp_path / "copy.tar.gz"
    copy.write_bytes(data)
    report = verify_archive(copy, expected_sha256=snapshot.sha256)
    assert report.ok and report.files == len(
        parse_manifest("".join(f"{v}  {k}\n" for k, v in report.manifest.items()))
    )

    n = snapshot.size // 3
    rest = client.get(url + "download", HTTP_RANGE=f"bytes={n}-", HTTP_IF_RANGE=full["ETag"])
    assert rest.status_code == 206
    assert rest["Content-Range"] == f"bytes {n}-{snapshot.size - 1}/{snapshot.size}"
    part = body(rest)
    assert int(rest["Content-Length"]) == len(part) == snapshot.size - n
    assert data[:n] + part == data
    middle = client.get(url + "download", HTTP_RANGE="bytes=10-19")
    assert middle.status_code == 206 and body(middle) == data[10:20]
    tail = client.get(url + "download", HTTP_RANGE="bytes=-7")
    assert body(tail) == data[-7:]

    unsatisfiable = client.get(url + "download", HTTP_RANGE=f"bytes={snapshot.size}-")
    assert unsatisfiable.status_code == 416 and unsatisfiable["Content-Range"] == f"bytes */{snapshot.size}"
    # A partial copy of some other file (stale validator): the whole file again, not a splice.
    stale = client.get(url + "download", HTTP_RANGE=f"bytes={n}-", HTTP_IF_RANGE='"0123"')
    assert stale.status_code == 200 and body(stale) == data
    multi = client.get(url + "download", HTTP_RANGE="bytes=0-1,5-6")
    assert multi.status_code == 200 and body(multi) == data
    cached = client.get(url + "download", HTTP_IF_NONE_MATCH=full["ETag"])
    assert cached.status_code == 304 and cached.content == b""
    assert client.get("/snapshots/snapset/99/download").status_code == 404


@pytest.mark.django_db(transaction=True)
@pytest.mark.urls(URLS)
def test_broken_download_resumes_through_a_real_http_server(live_server, snapshot):
    url = f"{live_server.url}/snapshots/snapset/{snapshot.number}/download"
    head = requests.head(url, timeout=30)
    assert head.status_code == 200 and int(head.headers["Content-Length"]) == snapshot.size
    # The first attempt breaks off after a few kilobytes: the client drops the connection.
    with requests.get(url, stream=True, timeout=30) as first:
        assert first.status_code == 200 and first.headers["ETag"] == f'"{snapshot.sha256}"'
        got = first.raw.read(4096)
    assert len(got) == 4096 < snapshot.size
    resumed = requests.get(
        url, headers={"Range": f"bytes={len(got)}-", "If-Range": f'"{snapshot.sha256}"'}, timeout=30
    )
    assert resumed.status_code == 206
    assert resumed.headers["Content-Range"] == f"bytes {len(got)}-{snapshot.size - 1}/{snapshot.size}"
    whole = got + resumed.content
    assert len(whole) == snapshot.size
    assert (
        hashlib.sha256(whole).hexdigest()
        == snapshot.sha256
        == hashlib.sha256(snapshot_path(snapshot).read_bytes()).hexdigest()
    )
    assert requests.get(url, headers={"Range": f"bytes={snapshot.size + 5}-"}, timeout=30).status_code == 416


@pytest.mark.django_db
@pytest.mark.urls(URLS)
def test_pair_download_csv(client, settings, tmp_path):
    settings.SNAPSHOT_DIR = tmp_path
    build_scored_dataset()
    response = client.get("/snapshots/snapset/compare/Alpha/Gamma(seed).csv")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(body(response).decode())))
    # Gamma has counts on 9 targets, Alpha on all 14: 9 common targets x 2 definitions.
    assert len(rows) == 9 * 2
    assert {r["definition"] for r in rows} == {"standard", "extended"}
    for r in rows:
        for label, method in (("a", "Alpha"), ("b", "Gamma(seed)")):
            s = Score.objects.get(
                prediction__method_version__method__name=method,
                prediction__method_version__is_current=True,
                prediction__target__source_id=r["target"],
                definition=r["definition"],
            )
            assert (int(r[f"{label}_tp"]), int(r[f"{label}_fp"]), int(r[f"{label}_tn"])) == (s.tp, s.fp, s.tn)
            assert r[f"{label}_pairs"] == s.prediction.pairs
    sub = client.get("/snapshots/snapset/compare/Alpha/Gamma(seed).csv?subset=ext")
    sub_rows = list(csv.DictReader(io.StringIO(body(sub).decode())))
    # The "ext" subset drops the first two targets and is ranked under the extended definition only.
    assert {r["definition"] for r in sub_rows} == {"extended"} and len(sub_rows) == 9 - 2
    assert client.get("/snapshots/snapset/compare/Alpha/Nobody.csv").status_code == 404
    assert client.get("/snapshots/snapset/compare/Alpha/Beta.csv?subset=nope").status_code == 404
