"""Snapshot import treats the archive as untrusted (issue 11).

Anyone can edit an archive and write a matching MANIFEST ("tampered but re-checksummed"). The issue's
attack: a snapshot with an edited method imported it active, with a fake fingerprint, and
``queue_predictions`` ran it.
Now every spec is validated, fingerprints are recomputed, imported versions are never run, ``--sha256``
pins the archive, and malformed content gives a clear error naming the member, with nothing stored.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from comparna.models import Target
from comparna.snapshots import restore
from comparna.snapshots.archive import SnapshotWriter, file_sha256, iter_members, verify_archive
from comparna.snapshots.common import SnapshotError
from comparna.snapshots.restore import database_is_empty, import_snapshot
from predictors.core.spec import PredictorSpec
from predictors.models import Method, MethodVersion, Prediction
from predictors.services import (
    execute_prediction,
    queue_predictions,
    register_spec,
    requeue_stuck_predictions,
)
from tests.django.test_snapshot_service import _empty_database, build_scored_dataset
from tests.factories import make_target

pytestmark = pytest.mark.django_db

EVIL_ARGV = ["/bin/sh", "-c", "cat /etc/passwd; : {sequence}"]


@pytest.fixture
def archive(settings, tmp_path) -> Path:
    settings.SNAPSHOT_DIR = tmp_path / "snapshots"
    build_scored_dataset()
    out = tmp_path / "genuine.tar.gz"
    call_command("make_snapshot", "snapset", "--output", str(out), "--no-record", stdout=io.StringIO())
    _empty_database()
    return out


def members(path: Path) -> dict[str, bytes]:
    return {name: fh.read() for name, fh in iter_members(path) if name != "MANIFEST"}


def repack(source: Path, dest: Path, edit) -> Path:
    """Edit the members (a dict name -> bytes, in archive order) and write them with a fresh MANIFEST."""
    root = verify_archive(source).root
    files = members(source)
    edit(files)
    writer = SnapshotWriter(dest, root=root, mtime=0)
    for name, data in files.items():
        writer.add_bytes(name, data)
    writer.close()
    assert verify_archive(dest).ok  # re-checksummed: the MANIFEST says nothing
    return dest


def edit_json(files: dict, name: str, change) -> None:
    value = json.loads(files[name])
    change(value)
    files[name] = json.dumps(value).encode()


def edit_csv(files: dict, name: str, change) -> None:
    rows = list(csv.DictReader(io.StringIO(files[name].decode())))
    fields = list(rows[0])
    for row in rows:
        change(row)
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    files[name] = out.getvalue().encode()


def evil_alpha(files: dict, *, refingerprint: bool) -> None:
    """Alpha's command replaced; with ``refingerprint`` every fingerprint column is made consistent."""

    def method(records):
        alpha = next(m for m in records if m["name"] == "Alpha")
        alpha["spec"]["argv"] = EVIL_ARGV
        alpha["active"] = True
        if refingerprint:
            old, new = alpha["fingerprint"], PredictorSpec.from_dict(alpha["spec"]).fingerprint()
            alpha["fingerprint"] = new
            for table in ("predictions/predictions.csv", "scores/counts.csv"):
                edit_csv(files, table, lambda r: r.update(fingerprint=new) if r["fingerprint"] == old else 0)

    edit_json(files, "predictions/methods.json", method)


def test_edited_command_under_its_old_fingerprint_is_refused(archive, tmp_path):
    tampered = repack(archive, tmp_path / "t.tar.gz", lambda f: evil_alpha(f, refingerprint=False))
    with pytest.raises(CommandError, match="method 'Alpha': fingerprint .* is not its spec's"):
        call_command("import_snapshot", str(tampered), "--no-rank", stdout=io.StringIO())
    assert database_is_empty()


def test_tampered_and_refingerprinted_snapshot_imports_nothing_runnable(archive, tmp_path):
    def edit(files):
        evil_alpha(files, refingerprint=True)
        done = []

        def queue_one(row):  # a queued Alpha prediction in the archive: nothing may ever run it
            if row["method"] == "Alpha" and not done:
                row.update(status="queued", pairs="", dot_bracket="", runtime_s="", exit_code="")
                row.update(finished_at="")
                done.append(row["target"])

        edit_csv(files, "predictions/predictions.csv", queue_one)

    tampered = repack(archive, tmp_path / "t.tar.gz", edit)
    import_snapshot(path=tampered)
    alpha = MethodVersion.objects.get(method__name="Alpha", is_current=True)
    assert alpha.spec["argv"] == EVIL_ARGV and not alpha.runnable
    assert not MethodVersion.objects.filter(runnable=True).exists()  # nothing from the archive runs
    # Nothing is queued: not on the imported targets, not on a new one (a weekly poll's).
    before = Prediction.objects.count()
    assert queue_predictions() == 0
    new = make_target("GGGGAAACCCC", "((((...))))", dataset=Target.objects.first().dataset)
    assert queue_predictions(targets=[new]) == 0 and Prediction.objects.count() == before
    # The archived queued prediction is neither re-sent by the sweep nor run if a message arrives.
    queued = Prediction.objects.get(method_version=alpha, status=Prediction.Status.QUEUED)
    assert requeue_stuck_predictions(lost_after_s=0)["resent"] == 0
    assert execute_prediction(prediction_id=queued.pk).status == Prediction.Status.QUEUED
    queued.refresh_from_db()
    assert queued.status == Prediction.Status.QUEUED and queued.attempts == 0 and not queued.runner
    # Registering the method again (catalogue or admin, with a test run) is what makes it runnable.
    spec = PredictorSpec.from_dict({**alpha.spec, "argv": ["/bin/echo", "((((...))))", "{sequence}"]})
    assert register_spec(spec=spec, from_catalogue=False, active=True).runnable


def test_invalid_spec_is_refused_with_the_reason(archive, tmp_path):
    def edit(files):
        def change(records):
            records[0]["spec"]["argv"] = ["/bin/echo", "{nope}"]
            records[0]["fingerprint"] = PredictorSpec.from_dict(records[0]["spec"]).fingerprint()

        edit_json(files, "predictions/methods.json", change)

    tampered = repack(archive, tmp_path / "t.tar.gz", edit)
    with pytest.raises(CommandError, match=r"invalid spec: argv\[1\]: unknown placeholder \{nope\}"):
        call_command("import_snapshot", str(tampered), stdout=io.StringIO())
    assert database_is_empty()


def _subset_missing_target(files):
    edit_json(files, "metadata/subsets.json", lambda s: s[0]["targets"].append("NOPE"))


def _not_json(files):
    files["metadata/targets.json"] = b"{not json"


def _unknown_method(files):
    def rename(row):
        if row["method"] == "Beta":
            row["method"] = "Ghost"

    edit_csv(files, "predictions/predictions.csv", rename)


def _bad_date(files):
    edit_json(files, "metadata/targets.json", lambda t: t[0].update(release_date="2024-13-45"))


def _bad_ranking(files):
    name = next(n for n in files if n.startswith("rankings/"))
    edit_json(files, name, lambda r: r.update(seed="seven"))


def _bad_pairs(files):
    name = next(n for n in files if n.startswith("references/") and n.endswith("pairs.jsonl"))
    lines = files[name].decode().splitlines()
    first = json.loads(lines[0])
    first["pairs"] = [["²", 3]]
    files[name] = "\n".join([json.dumps(first), *lines[1:]]).encode() + b"\n"


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (_subset_missing_target, "names target 'NOPE', which metadata/targets.json does not hold"),
        (_not_json, "metadata/targets.json: not valid JSON"),
        (_unknown_method, "names method 'Ghost', which predictions/methods.json does not hold"),
        (_bad_date, "metadata/targets.json: malformed content"),
        (_bad_ranking, "'seed' missing or not a int"),
        (_bad_pairs, "references/"),
    ],
    ids=["subset-missing-target", "not-json", "unknown-method", "bad-date", "bad-ranking", "bad-pairs"],
)
def test_malformed_content_gives_a_clear_error_and_stores_nothing(archive, tmp_path, edit, message):
    tampered = repack(archive, tmp_path / "t.tar.gz", edit)
    with pytest.raises(CommandError) as info:
        call_command("import_snapshot", str(tampered), stdout=io.StringIO())
    assert message in str(info.value)
    assert database_is_empty()


def test_json_members_are_read_under_a_cap(archive, monkeypatch):
    monkeypatch.setattr(restore, "MAX_JSON_BYTES", 100)
    with pytest.raises(SnapshotError, match="decompresses to more than"):
        import_snapshot(path=archive)
    assert database_is_empty()


def test_sha256_pins_the_archive(archive):
    with pytest.raises(CommandError, match="64 hexadecimal digits"):
        call_command("import_snapshot", str(archive), "--sha256", "abc")
    wrong = hashlib.sha256(b"another archive").hexdigest()
    with pytest.raises(CommandError, match=f"differs from the expected {wrong}"):
        call_command("import_snapshot", str(archive), "--sha256", wrong, "--no-rank")
    assert database_is_empty()
    out = io.StringIO()
    sha = file_sha256(archive).upper()
    call_command("import_snapshot", str(archive), "--sha256", sha, "--no-rank", stdout=out)
    assert "imported dataset snapset" in out.getvalue() and "are not run" in out.getvalue()
    assert Method.objects.count() == 4 and not MethodVersion.objects.filter(runnable=True).exists()
