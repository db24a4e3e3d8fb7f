"""One α and one text (issue 27): page texts about schedules and datasets come from the instance's own
settings and data, and the thresholds quoted on pages come from comparna.rna.thresholds."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from celery.schedules import crontab
from django.core.cache import cache
from django.urls import reverse

from comparna.models import Dataset
from comparna.rna import thresholds
from comparna.services.instance_text import ranking_schedule_text
from tests.factories import make_dataset

pytestmark = pytest.mark.django_db
TEMPLATES = Path(__file__).resolve().parents[2] / "templates"


@pytest.fixture(autouse=True)
def fresh_cache():
    cache.clear()
    yield
    cache.clear()


def test_schedule_text_is_read_from_the_schedule():
    assert ranking_schedule_text(crontab(hour=2, minute=30)) == "nightly at 02:30 UTC"
    assert ranking_schedule_text(300.0) == "every 5 minutes"
    assert ranking_schedule_text(dt.timedelta(hours=6)) == "every 6 hours"
    from comparna.scheduled import SCHEDULE

    assert ranking_schedule_text() == ranking_schedule_text(SCHEDULE["nightly-rankings"]["schedule"])


def test_pages_say_the_instances_schedule_and_only_the_datasets_it_has(client):
    make_dataset("strandlike")
    page = client.get(reverse("datasets")).content.decode()
    assert "grows every week" not in page  # no PDB dataset on this instance
    assert f"recomputed {ranking_schedule_text()}" in page
    assert "nightly" not in client.get(reverse("rankings-index")).content.decode() or (
        ranking_schedule_text().startswith("nightly")
    )
    Dataset.objects.create(slug="pdb", name="PDB", kind=Dataset.Kind.PDB, definitions=["extended"])
    assert "grows every week" in client.get(reverse("datasets")).content.decode()


def test_about_page_explains_each_verdict_with_the_one_alpha(client):
    page = client.get(reverse("about")).content.decode()
    assert 'id="verdicts"' in page and 'id="protocol-2013"' in page
    assert f"p &lt; {thresholds.ALPHA}" in page and "Holm" in page
    assert "not evidence" in page and "Rosner, Glynn" in page
    # "=" by equivalence within ±δ (issue 35: was the power rule's margin)
    assert f"δ = {thresholds.EQUIVALENCE_DELTA} MCC" in page and "floor" in page


def test_no_template_hard_codes_a_ranking_alpha_or_a_nightly_schedule():
    for path in TEMPLATES.rglob("*.html"):
        text = path.read_text(encoding="utf-8")
        assert "as in the rankings):" not in text or "{% threshold" in text, path
        assert "recomputed nightly" not in text, path
        assert "computed nightly" not in text, path
