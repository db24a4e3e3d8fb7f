"""Frozen predictions, the weekly commitment file and its verification.

Freezing: every prediction on a blind target that reached an outcome gets a :class:`FrozenPrediction` — the
SHA-256 of its content (target, sequence, method, version, fingerprint, outcome, pairs, probabilities and a
random nonce, as canonical JSON) and the clock times it finished and was frozen. The sweep
(:func:`freeze_predictions`) reads stored rows, whichever path stored them (a worker, an owner's upload),
so it needs no hook in the prediction code; lateness is judged from the row's ``finished_at``.

Commitment: at the deadline (:func:`commit_week`) the hashes of every prediction finished by then are written
to the week's commitment file (TSV, one line per prediction), whose own SHA-256 is published beside it, and
those predictions become ``committed``. Everything frozen afterwards is late: stored and shown, never ranked.

Verification (:func:`verify_week`, ``manage.py verify_blind``, the week page): the commitment file against
its published hash, and every committed prediction's current stored content against the hash it was
committed with. The nonce keeps a hash from being matched by guessing a structure before the release; the
contents with their nonces are published after the release so anyone can recompute every hash.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import secrets
from dataclasses import dataclass, field

from django.db import IntegrityError, transaction
from django.db.models import Q

from comparna import clock
from comparna.blind.models import BlindTarget, BlindWeek, FrozenPrediction
from predictors.models import Prediction, public_prediction_q

FORMAT = "comparna-blind-prediction-1"
#: States that are not an outcome yet (an upload-only method's prediction waits in "awaiting").
OPEN_STATES = ("queued", "running", "awaiting", "infrastructure_error")
COLUMNS = ("prediction", "target", "method", "version", "status", "sha256")


def canonical_json(value) -> str:
    """The one text form hashed: sorted keys, no spaces, ASCII only."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def content_of(prediction: Prediction, nonce: str) -> dict:
    """What is hashed for ``prediction`` (as stored now)."""
    version = prediction.method_version
    return {
        "format": FORMAT,
        "target": prediction.target.source_id,
        "sequence": prediction.target.sequence,
        "method": version.method.name,
        "version": version.version,
        "fingerprint": version.fingerprint,
        "status": prediction.status,
        "pairs": prediction.pairs,
        "probabilities": prediction.probabilities,
        "nonce": nonce,
    }


def digest(content: dict) -> str:
    return sha256_text(canonical_json(content))


def _blind_predictions():
    return (
        # only what counts publicly (the one rule, issue 36): never an owner's development method (i17), a
        # version staff have not approved, nor a self-reported upload (after the release: issues 26, 36)
        Prediction.objects.public()
        .filter(target__blind__isnull=False)
        .exclude(status__in=OPEN_STATES)
        .select_related("method_version__method", "target__blind__week")
    )


def _public_frozen():
    """Frozen rows of predictions that count publicly (rows frozen before issue 36 may hold a self-reported
    upload: never committed nor published)."""
    return FrozenPrediction.objects.filter(public_prediction_q("prediction__"))


def freeze_predictions(*, week: BlindWeek | None = None, now: dt.datetime | None = None) -> int:
    """Freeze every finished, not yet frozen prediction on a blind target (of ``week``, or all). Returns how
    many were frozen."""
    now = now or clock.now()
    qs = _blind_predictions().filter(frozen__isnull=True)
    if week is not None:
        qs = qs.filter(target__blind__week=week)
    n = 0
    for prediction in qs.order_by("pk"):
        if freeze_prediction(prediction, now=now) is not None:
            n += 1
    return n


def freeze_prediction(prediction: Prediction, *, now: dt.datetime | None = None) -> FrozenPrediction | None:
    """Freeze one finished prediction on a blind target (an owner's upload is frozen as it is stored).

    Returns the new :class:`FrozenPrediction`, or None when it was frozen already (by a concurrent sweep:
    the first one stands) or does not count publicly (a self-reported upload, a version staff have not
    approved: never part of a week's commitment or published predictions, issue 36). Late when its week is
    committed already or it finished after the deadline.
    """
    if not _blind_predictions().filter(pk=prediction.pk).exists():
        return None
    now = now or clock.now()
    blind = prediction.target.blind
    finished = clock.clock().of(prediction.finished_at) if prediction.finished_at else now
    nonce = secrets.token_hex(16)
    content = content_of(prediction, nonce)
    try:
        with transaction.atomic():
            # the week's row is locked as commit_week locks it: a freeze is before or after a commitment
            week_of = BlindWeek.objects.select_for_update().get(pk=blind.week_id)
            late = week_of.committed or finished > week_of.deadline
            return FrozenPrediction.objects.create(
                blind_target=blind,
                prediction=prediction,
                method_name=content["method"],
                method_version=content["version"],
                fingerprint=content["fingerprint"],
                status=prediction.status,
                nonce=nonce,
                sha256=digest(content),
                content=content,
                finished_at=finished,
                frozen_at=now,
                late=late,
            )
    except IntegrityError:
        return None


def commit_week(week: BlindWeek, *, now: dt.datetime | None = None) -> bool:
    """Write the week's commitment if its deadline has passed and it has none. Returns whether it did."""
    now = now or clock.now()
    if week.committed or week.status != BlindWeek.Status.OPEN or now < week.deadline:
        return False
    freeze_predictions(week=week, now=now)
    with transaction.atomic():
        locked = BlindWeek.objects.select_for_update().get(pk=week.pk)
        if locked.committed:
            return False
        frozen = _public_frozen().filter(blind_target__week=locked)
        on_time = list(
            frozen.filter(finished_at__lte=locked.deadline, late=False)
            .select_related("blind_target__target", "prediction")
            .order_by("blind_target__target__source_id", "method_name", "method_version", "pk")
        )
        text = commitment_text(locked, on_time, now=now)
        frozen.filter(pk__in=[f.pk for f in on_time]).update(committed=True)
        frozen.exclude(pk__in=[f.pk for f in on_time]).update(late=True)
        locked.commitment = text
        locked.commitment_sha256 = sha256_text(text)
        locked.committed_at = now
        locked.status = BlindWeek.Status.COMMITTED
        if now > locked.release_at:
            locked.note = "committed after the release: this week's predictions are not blind"
        locked.save()
    week.refresh_from_db()
    return True


def commitment_text(week: BlindWeek, rows: list[FrozenPrediction], *, now: dt.datetime) -> str:
    targets = {f.blind_target_id for f in rows}
    methods = {f.method_name for f in rows}
    lines = [
        f"# CompaRNA blind track: commitment for the PDB release of {week.release_date} "
        f"(Wednesday 00:00 UTC)",
        f"# deadline {_iso(week.deadline)}; committed {_iso(now)}; {len(rows)} predictions of "
        f"{len(methods)} methods on {len(targets)} of {week.targets.count()} targets",
        "# sha256 = SHA-256 of the UTF-8 canonical JSON (sorted keys, no spaces, ASCII) of the prediction's",
        f"# content ({FORMAT}); the contents with their nonces are published after the release at",
        f"# /blind/{week.release_date}/predictions.json",
        "\t".join(COLUMNS),
    ]
    for f in rows:
        lines.append(
            "\t".join(
                [
                    str(f.prediction_id),
                    f.blind_target.target.source_id,
                    f.method_name,
                    f.method_version,
                    f.status,
                    f.sha256,
                ]
            )
        )
    return "\n".join(lines) + "\n"


def _iso(moment: dt.datetime) -> str:
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_commitment(text: str) -> list[dict]:
    """The lines of a commitment file as dicts of :data:`COLUMNS` (comments skipped)."""
    rows = []
    header = None
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        fields = line.split("\t")
        if header is None:
            header = fields
            continue
        rows.append(dict(zip(header, fields, strict=False)))
    return rows


@dataclass
class Verification:
    """The outcome of checking one week."""

    week: str
    committed: int = 0
    matching: int = 0
    commitment_ok: bool = True
    problems: list[dict] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.commitment_ok and not self.problems

    def as_dict(self) -> dict:
        return {
            "week": self.week, "committed": self.committed, "matching": self.matching,
            "commitment_ok": self.commitment_ok, "ok": self.ok, "problems": self.problems,
        }


def verify_week(week: BlindWeek, *, commitment: str | None = None) -> Verification:
    """Check the week's commitment and every committed prediction as stored now.

    ``commitment`` is a copy of the commitment file obtained independently (e.g. downloaded before the
    release); by default the stored one is checked against its stored hash.
    """
    report = Verification(str(week.release_date))
    if not week.committed:
        return report
    text = week.commitment if commitment is None else commitment
    if sha256_text(text) != week.commitment_sha256:
        report.commitment_ok = False
        report.problems.append(
            {"what": "commitment", "detail": "the commitment file does not match its published SHA-256"}
        )
    lines = parse_commitment(text)
    report.committed = len(lines)
    frozen = {
        str(f.prediction_id): f
        for f in FrozenPrediction.objects.filter(blind_target__week=week).select_related(
            "prediction__method_version__method", "prediction__target"
        )
    }
    listed = set()
    for line in lines:
        pk, expected = line.get("prediction", ""), line.get("sha256", "")
        listed.add(pk)
        f = frozen.get(pk)
        where = {"prediction": pk, "target": line.get("target"), "method": line.get("method")}
        if f is None or f.prediction is None:
            gone = "the prediction is no longer stored"
            report.problems.append({**where, "what": "missing", "detail": gone})
            continue
        now = content_of(f.prediction, f.nonce)
        if digest(now) == expected and f.sha256 == expected:
            report.matching += 1
            continue
        changed = sorted(k for k in now if now[k] != f.content.get(k))
        detail = (
            f"changed after the commitment: {', '.join(changed)}"
            if changed
            else "the stored hash differs from the committed one"
        )
        report.problems.append({**where, "what": "changed", "detail": detail, "fields": changed})
    for pk, f in frozen.items():
        if f.committed and pk not in listed:
            report.problems.append(
                {"prediction": pk, "target": f.blind_target.target.source_id, "method": f.method_name,
                 "what": "unlisted", "detail": "marked committed but not in the commitment file"}
            )
    return report


def published_contents(week: BlindWeek) -> list[dict]:
    """Every frozen prediction of the week with what was hashed (after the release only: see the view)."""
    out = []
    for f in (
        # a committed row stays published even if its prediction was deleted since (verification says so)
        FrozenPrediction.objects.filter(Q(committed=True) | public_prediction_q("prediction__"))
        .filter(blind_target__week=week)
        .select_related("blind_target__target")
        .order_by("blind_target__target__source_id", "method_name", "pk")
    ):
        out.append(
            {
                "prediction": f.prediction_id,
                "sha256": f.sha256,
                "committed": f.committed,
                "late": f.late,
                "finished_at": _iso(f.finished_at),
                "frozen_at": _iso(f.frozen_at),
                "content": f.content,
            }
        )
    return out


def open_blind_targets(week: BlindWeek):
    return BlindTarget.objects.filter(week=week).select_related("target")
