"""The weekly PDB set in time windows and week by week (issue 29): rolling subsets (last 4 weeks, 6 months,
year) ranked like any subset, and a page per release day with every method's score on every target."""

from __future__ import annotations

import datetime as dt
import re

import pytest

from comparna.models import Dataset, Score, Subset, Target
from ingest.services.pdb import PDB_SLUG, RELEASE_WINDOWS, ensure_pdb_dataset, refresh_release_windows
from tests.web_data import site_fixture  # noqa: F401 - registers the module-scoped `site` fixture

pytestmark = pytest.mark.django_db


def test_release_windows_hold_the_targets_of_their_last_days_and_move_on():
    dataset = ensure_pdb_dataset()
    slugs = [s.slug for s in dataset.subsets.all()]
    assert slugs[:4] == ["all", "last-4-weeks", "last-6-months", "last-year"]
    start = dt.date(2025, 1, 1)  # a Wednesday; one target a week for 60 weeks
    targets = [
        Target.objects.create(dataset=dataset, source_id=f"9W{k:02d}_A", sequence="GGGAAACCC", length=9,
                              release_date=start + dt.timedelta(weeks=k))
        for k in range(60)
    ]
    today = start + dt.timedelta(weeks=59, days=1)  # the Thursday after the last release
    sizes = refresh_release_windows(today=today)
    assert sizes == {"last-4-weeks": 4, "last-6-months": 26, "last-year": 52}
    for slug, _, days in RELEASE_WINDOWS:
        members = set(Subset.objects.get(dataset=dataset, slug=slug).targets.values_list("pk", flat=True))
        assert members == {t.pk for t in targets if t.release_date > today - dt.timedelta(days=days)}
    # a week later with no new release: the windows slide on
    assert refresh_release_windows(today=today + dt.timedelta(weeks=1))["last-4-weeks"] == 3
    # the window subsets are ranked like any other (every subset × definition)
    windows = dataset.subsets.filter(slug__startswith="last")
    assert all(s.definitions() == list(dataset.definitions) for s in windows)


def test_no_pdb_dataset_no_windows():
    assert not Dataset.objects.filter(slug=PDB_SLUG).exists()
    assert refresh_release_windows(today=dt.date(2026, 1, 1)) == {}
    assert not Dataset.objects.filter(slug=PDB_SLUG).exists()


def test_week_pages_list_each_release_and_every_methods_score(client, site):
    pdb = Dataset.objects.get(slug="pdb")
    index = client.get("/weeks/pdb/").content.decode()
    released = Target.objects.filter(dataset=pdb).values_list("release_date", flat=True)
    days = sorted(set(released), reverse=True)
    assert re.findall(r'href="/weeks/pdb/(\d{4}-\d{2}-\d{2})/"', index) == [d.isoformat() for d in days]
    assert 'id="weeks-link"' in client.get("/rankings/pdb/").content.decode()

    day = days[0]
    page = client.get(f"/weeks/pdb/{day.isoformat()}/").content.decode()
    week_targets = list(Target.objects.filter(dataset=pdb, release_date=day))
    for t in week_targets:
        assert f'href="/targets/{t.pk}/"' in page
    scores = Score.objects.current().filter(definition="extended", prediction__target__in=week_targets)
    assert scores.exists()
    for s in scores.select_related("prediction__method_version__method"):
        name = s.prediction.method_version.method.name
        row = re.search(rf'<tr data-method="{re.escape(name)}">(.*?)</tr>', page, re.S).group(1)
        assert f"{s.mcc:.3f}" in row
    standard = client.get(f"/weeks/pdb/{day.isoformat()}/?definition=standard").content.decode()
    assert "<strong>standard</strong>" in standard
    assert client.get(f"/weeks/pdb/{day.isoformat()}/?definition=nope").status_code == 404
    assert client.get("/weeks/pdb/1999-01-06/").status_code == 404  # no release that day
    assert client.get("/weeks/rnastrand/").status_code == 404  # a static set has no weeks
