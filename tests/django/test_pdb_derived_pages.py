"""The home page and /rankings/ list the PDB-derived sets (issue 38) after the others, under "PDB-derived",
each with what it is and what it is not (not blind; whose labels)."""

from __future__ import annotations

import html

import pytest
from django.core.cache import cache

from comparna.models import Dataset
from ingest.datasets.catalogue import ARCHIVEII
from ingest.datasets.pdb_catalogue import PDB_HIRES, RNA3DB_2D, SPOT_RNA
from ingest.services.datasets import ensure_dataset

pytestmark = pytest.mark.django_db


@pytest.fixture
def datasets():
    for decl in (SPOT_RNA, ARCHIVEII, RNA3DB_2D, PDB_HIRES):
        ensure_dataset(decl)
    return Dataset.objects.all()


@pytest.mark.parametrize("path", ["/", "/rankings/"])
def test_pdb_derived_sets_are_listed_after_the_others_with_what_they_are_not(client, datasets, path):
    cache.clear()
    page = html.unescape(client.get(path).content.decode())
    assert page.count('id="pdb-derived"') == 1
    heading = page.index('id="pdb-derived"')
    assert page.index(ARCHIVEII.title) < heading  # the first benchmarks come first
    for decl in (SPOT_RNA, RNA3DB_2D, PDB_HIRES):
        assert page.index(decl.title) > heading
        assert decl.what_it_is_not in page and decl.what_it_is in page
    assert "None is blind" in page and "annotated by this project's own pipeline" in page
