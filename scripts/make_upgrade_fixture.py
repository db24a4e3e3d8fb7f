#!/usr/bin/env python3
"""Build the upgrade fixture: a site made by a previous release's own code (tests/e2e/test_ops_upgrade.py).

    .venv/bin/python scripts/make_upgrade_fixture.py [--commit SHA] [--out FILE]

(default FILE: tests/data/upgrade/previous-release.tar.gz)

Checks the commit out in a temporary git worktree (the full history is needed here, not in the test: the
test reads only the committed archive), migrates a fresh SQLite database with that commit's migrations, and
builds a small site with that commit's own code: targets and references, two methods with predictions and
scores, a ranking, a dataset snapshot archive and an owner account. The archive holds the database, the
snapshot store and ``expected.json`` (the commit, its migration leaves and every row the test must find after
upgrading). Rebuild it at each release with the release's commit.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# The last landed release (stop 23): its rankings are stored in the 2013 format (before issue 27), its
# migrations end before predictors 0008 and the ops/tallies apps.
PREVIOUS_RELEASE = "52210089400324848c238d876afd2903a3316c63"
FIXTURE = REPO / "tests" / "data" / "upgrade" / "previous-release.tar.gz"

BUILD = r"""
import json, random
import django
django.setup()
from django.contrib.auth import get_user_model
from django.db.migrations.recorder import MigrationRecorder
from django.db import connection
from comparna.models import Dataset, Subset, Target, ReferenceStructure, Score, RankingSnapshot
from comparna.owners.models import OwnerProfile
from comparna.services.rankings import rank_subset
from comparna.services.scoring import score_prediction
from comparna.snapshots.lifecycle import make_snapshot_if_changed
from comparna.snapshots.models import DatasetSnapshot
from predictors.models import Method, MethodVersion, Prediction
from tests.factories import make_method_version, make_prediction, make_target

rng = random.Random(2026)

def db(n):
    chars = ["."] * n
    for _ in range(n // 6):
        i = rng.randrange(0, n - 4); j = rng.randrange(i + 4, n)
        if chars[i] == chars[j] == "." and all(c == "." for c in chars[i:j + 1]):
            chars[i], chars[j] = "(", ")"
    return "".join(chars)

versions = [make_method_version(name) for name in ("Alpha", "Beta")]
for _ in range(12):
    target = make_target("GCAU" * 9, db(36))
    for version in versions:
        prediction = make_prediction(version, target, db(36))
        Prediction.objects.filter(pk=prediction.pk).update(runtime_s=rng.uniform(0.1, 3.0))
        score_prediction(prediction=prediction)
subset = Subset.objects.get(slug="all")
rank_subset(subset=subset, definition="extended", seed=11)
make_snapshot_if_changed(subset.dataset, background=False)
user = get_user_model().objects.create_user("owner", "owner@example.org", "upgrade-password-42")
OwnerProfile.objects.create(user=user, affiliation="Upgrade Lab")

MODELS = {
    "dataset": Dataset, "subset": Subset, "target": Target, "reference": ReferenceStructure,
    "method": Method, "method_version": MethodVersion, "prediction": Prediction, "score": Score,
    "ranking": RankingSnapshot, "snapshot": DatasetSnapshot, "user": get_user_model(), "owner": OwnerProfile,
}
rows = {name: list(model.objects.order_by("pk").values()) for name, model in MODELS.items()}
leaves = {}
for app, name in MigrationRecorder(connection).applied_migrations():
    leaves[app] = max(leaves.get(app, ""), name)
print(json.dumps({"rows": rows, "migrations": leaves}, default=str, sort_keys=True))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commit", default=PREVIOUS_RELEASE)
    parser.add_argument("--out", type=Path, default=FIXTURE)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="comparna-upgrade-fixture-"))
    source, data = work / "src", work / "data"
    try:
        subprocess.run(["git", "worktree", "add", "--detach", str(source), args.commit], cwd=REPO, check=True)
        env = {
            **os.environ,
            "COMPARNA_DATA_DIR": str(data),
            "COMPARNA_SNAPSHOT_DIR": str(data / "snapshots"),
            "DJANGO_SETTINGS_MODULE": "comparna.settings",
            "PYTHONPATH": str(source),
        }
        env.pop("DATABASE_URL", None)
        subprocess.run([sys.executable, "manage.py", "migrate", "--noinput"], cwd=source, env=env, check=True)
        built = subprocess.run(
            [sys.executable, "-c", BUILD], cwd=source, env=env, check=True, capture_output=True, text=True
        )
        expected = json.loads(built.stdout.strip().splitlines()[-1])
        expected["commit"] = subprocess.run(
            ["git", "rev-parse", args.commit], cwd=REPO, check=True, capture_output=True, text=True
        ).stdout.strip()
        (work / "expected.json").write_text(json.dumps(expected, indent=1, sort_keys=True))
        args.out.parent.mkdir(parents=True, exist_ok=True)
        with tarfile.open(args.out, "w:gz") as tar:
            tar.add(data / "comparna.sqlite3", arcname="comparna.sqlite3")
            tar.add(data / "snapshots", arcname="snapshots")
            tar.add(work / "expected.json", arcname="expected.json")
        print(f"{args.out}: {args.out.stat().st_size} bytes, commit {expected['commit']}")
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(source)], cwd=REPO, check=False)
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
