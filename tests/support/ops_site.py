"""A small site with rankings, a dataset snapshot and an owner account, and ways to compare two sites'
contents: for the backup tests (tests/django/test_ops_backup.py, tests/e2e/test_ops_backup_pg.py)."""

from __future__ import annotations

import io
import json
import random

from django.contrib.auth import get_user_model
from django.core.management import call_command

from comparna.models import Subset
from comparna.ops.backup import sha256_of
from comparna.owners.models import OwnerProfile
from comparna.services.rankings import rank_subset
from comparna.services.scoring import score_prediction
from comparna.snapshots.lifecycle import make_snapshot_if_changed
from tests.factories import make_method_version, make_prediction, make_target


def _db(rng: random.Random, n: int) -> str:
    chars = ["."] * n
    for _ in range(n // 6):
        i = rng.randrange(0, n - 4)
        j = rng.randrange(i + 4, n)
        if chars[i] == chars[j] == "." and all(c == "." for c in chars[i : j + 1]):
            chars[i], chars[j] = "(", ")"
    return "".join(chars)


def site_with_rankings_snapshot_and_owner():
    rng = random.Random(3)
    versions = [make_method_version(name) for name in ("Alpha", "Beta")]
    for _ in range(6):
        target = make_target("GCAU" * 8, _db(rng, 32))
        for version in versions:
            score_prediction(prediction=make_prediction(version, target, _db(rng, 32)))
    subset = Subset.objects.get(slug="all")
    ranking, _ = rank_subset(subset=subset, definition="extended", seed=5)
    snapshot = make_snapshot_if_changed(subset.dataset, background=False)
    user = get_user_model().objects.create_user("owner", "owner@example.org", "a-long-password-42")
    OwnerProfile.objects.create(user=user, affiliation="Lab")
    return ranking, snapshot


def everything() -> dict:
    out = io.StringIO()
    call_command("dumpdata", "--exclude", "sessions", "--exclude", "ops", stdout=out)
    return {(row["model"], str(row["pk"])): row["fields"] for row in json.loads(out.getvalue())}


def files_of(root) -> dict:
    return {p.relative_to(root).as_posix(): sha256_of(p) for p in root.rglob("*") if p.is_file()}
