"""One rule for what is public (issue 36): a prediction is public only if its method version was approved by
staff, it is not self-reported and its method is public.

The walk requests every URL pattern of the project as an anonymous visitor (the URL resolver's list, with
real ids of a site that holds a public owner's method with an approved version, a version awaiting approval
and a withdrawn proposal, both with structures found nowhere else) and every API list and detail (with
``current=false`` too), and checks that neither hidden version's structure, version label or fingerprint
appears. Zip and gzip answers are read unpacked. A pattern the walk cannot fill is a failure: a new public
URL must be added here.
"""

from __future__ import annotations

import datetime as dt
import gzip
import io
import json
import tarfile
import uuid
import zipfile
from itertools import product

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.urls.resolvers import RoutePattern
from django.utils import timezone

from comparna.blind import prerelease
from comparna.blind.freezing import commit_week, freeze_predictions, parse_commitment
from comparna.blind.models import BlindTarget, BlindWeek, FrozenPrediction
from comparna.models import RankingSnapshot, ReferenceStructure, Score, Subset, Target
from comparna.owners.methods import register_owner_method
from comparna.owners.models import OwnerProfile
from comparna.rna.canonical import structure_to_text
from comparna.rna.formats import parse_dot_bracket, write_dot_bracket
from comparna.rna.structure import Structure
from comparna.services.pages.methods import refresh_method_summaries
from comparna.services.rankings import recompute_rankings
from comparna.services.scoring import score_prediction
from comparna.services.tallies import refresh_tallies
from comparna.snapshots.lifecycle import make_snapshot_if_changed
from comparna.snapshots.models import DatasetSnapshot
from ingest.services.pdb import ensure_pdb_dataset
from predictors.core.spec import PredictorSpec
from predictors.models import MethodVersion, Prediction
from predictors.publication import publish
from tests.django.test_integrity import approved_owner as token_owner
from tests.django.test_integrity import at, web_method
from tests.factories import make_dataset, make_method_version, make_target

pytestmark = pytest.mark.django_db

REFERENCES = [
    "((((((....))))))..((((....))))....",
    "(((((.....)))))...(((((....)))))..",
    "((((........))))..((((.....))))...",
    ".((((....)))).....(((((.....))))).",
    "(((((((.....)))))))...((((...)))).",
    "((((....))))......((((((...)))))).",
    "..(((((....)))))..((((.....))))...",
    "(((.((....)).)))...((((....))))...",
    "((((((.....)))))).(((.....))).....",
    ".(((((.....)))))...((((...))))....",
    "((((.....))))....((((((...))))))..",
    "(((((....)))))...(((((.....)))))..",
]
SEQ = "GGGGAAACCCCAAAGGGGAAAACCCCAAAAGGGA"
HIDDEN = {"pending": "9.9-unreviewed", "withdrawn": "8.8-withdrawn"}
#: URL names (with their namespace) the anonymous walk does not request, and why.
NOT_WALKED = {
    "favicon": "no name: a redirect to a static file",
}


def spec(version: str, *marker: str) -> PredictorSpec:
    return PredictorSpec(
        name="BobFold", program="bobfold", version=version, argv=("/bin/echo", "{sequence}", *marker)
    )


def hidden_pairs(length: int, offset: int) -> list[tuple[int, int]]:
    """Three pairs found in no reference and no other prediction (offset 0 or 1: one per hidden version)."""
    return [(2 + offset + 2 * k, length - 1 - offset - 2 * k) for k in range(3)]


def predict(version: MethodVersion, target: Target, pairs: list[tuple[int, int]]) -> Prediction:
    prediction, _ = Prediction.objects.update_or_create(
        method_version=version, target=target,
        defaults={"status": Prediction.Status.OK, "finished_at": timezone.now(), "runner": "sandbox",
                  "pairs": structure_to_text(Structure.from_pairs(target.length, pairs))},
    )
    if target.references.exists():
        score_prediction(prediction=prediction)
    return prediction


def approved_owner(name: str) -> User:
    user = User.objects.create_user(name, f"{name}@lab.example", "pw")
    OwnerProfile.objects.create(user=user, email_confirmed_at=timezone.now(), approved_at=timezone.now())
    return user


@pytest.fixture
def world(settings, tmp_path):
    """Static and weekly datasets, a blind week, a catalogue method and BobFold: approved ("1.0-approved"),
    a proposal withdrawn before approval and one awaiting approval, each with predictions everywhere."""
    settings.SNAPSHOT_DIR = tmp_path / "snapshots"
    cache.clear()
    strand = make_dataset("strand")
    for db in REFERENCES:
        make_target(SEQ, db, dataset=strand)
    pdb = ensure_pdb_dataset()
    start = dt.date(2025, 1, 1)
    for k, db in enumerate(REFERENCES[:4]):
        t = make_target(SEQ, db, dataset=pdb, definition="standard")
        make_reference(t, db, "extended")
        released = start + dt.timedelta(weeks=k)
        Target.objects.filter(pk=t.pk).update(source_id=f"9Q{k:02d}_A", release_date=released)
    release = timezone.now().date() - dt.timedelta(days=21)
    release -= dt.timedelta(days=(release.weekday() - 2) % 7)  # a Wednesday
    week = prerelease.ensure_week(release)
    BlindWeek.objects.filter(pk=week.pk).update(status=BlindWeek.Status.OPEN)
    blind_dataset = prerelease.ensure_blind_dataset()
    for k in range(2):
        t = Target.objects.create(dataset=blind_dataset, source_id=f"9BL{k}_1", sequence=SEQ, length=len(SEQ))
        BlindTarget.objects.create(week=week, target=t, pdb_id=f"9BL{k}", entity_id="1", announced=SEQ)

    other = make_method_version("OtherFold")
    bob = approved_owner("bob")
    approved = register_owner_method(user=bob, spec=spec("1.0-approved"))
    method = approved.method
    assert publish(method=method)
    method.refresh_from_db()
    withdrawn = register_owner_method(user=bob, spec=spec(HIDDEN["withdrawn"], "--withdrawn"), method=method)
    assert withdrawn.pending_review
    register_owner_method(user=bob, spec=spec("1.0-approved"), method=method)  # same program: withdraws it
    pending = register_owner_method(user=bob, spec=spec(HIDDEN["pending"], "--unreviewed"), method=method)
    withdrawn.refresh_from_db()
    assert pending.pending_review and not withdrawn.pending_review and not withdrawn.is_current
    method.refresh_from_db()
    assert method.is_public and method.current_version == approved

    hidden: dict[str, list[Prediction]] = {"pending": [], "withdrawn": []}
    for t in Target.objects.all():
        n = t.length
        predict(other.method.current_version, t, [(1, n), (3, n - 3)])
        predict(approved, t, [(1, n - 1)])
        hidden["withdrawn"].append(predict(withdrawn, t, hidden_pairs(n, 1)))
        hidden["pending"].append(predict(pending, t, hidden_pairs(n, 0)))
    freeze_predictions(week=week)
    week.refresh_from_db()
    commit_week(week, now=week.deadline + dt.timedelta(minutes=1))
    for ds in (strand, pdb):
        recompute_rankings(dataset=ds)
        make_snapshot_if_changed(ds, background=False)
    refresh_tallies()
    refresh_method_summaries()
    cache.clear()
    return {
        "bob": bob, "method": method, "other": other.method, "week": week,
        "datasets": [strand, pdb, blind_dataset],
        "hidden": hidden, "versions": {"pending": pending, "withdrawn": withdrawn},
    }


def make_reference(target: Target, db: str, definition: str) -> None:
    s = parse_dot_bracket(db, length=target.length)
    ReferenceStructure.objects.create(
        target=target, definition=definition, pairs=structure_to_text(s), n_pairs=len(s.pairs),
        pseudoknotted=s.is_pseudoknotted, has_multiplets=s.has_multiplets,
    )


def sentinels(world) -> list[str]:
    """What only the hidden versions have: labels, fingerprints, argv markers, pair texts, dot-brackets."""
    out = [*HIDDEN.values(), "--withdrawn", "--unreviewed"]
    out += [v.fingerprint for v in world["versions"].values()]
    for predictions in world["hidden"].values():
        for p in predictions:
            out.append(p.pairs)
            # as the API writes them
            out.append(json.dumps([list(x) for x in parse_pairs(p.pairs)], separators=(",", ":")))
            out.append(write_dot_bracket(Structure.from_pairs(p.target.length, parse_pairs(p.pairs))))
    return sorted(set(out))


def parse_pairs(text: str) -> list[tuple[int, int]]:
    return [tuple(int(x) for x in pair.split("-")) for pair in text.split()]


def body_text(response) -> str:
    """The answer's text, archives unpacked (zip members, gzip and tar.gz contents)."""
    raw = b"".join(response.streaming_content) if response.streaming else response.content
    if raw[:4] == b"PK\x03\x04":
        with zipfile.ZipFile(io.BytesIO(raw)) as z:
            return "\n".join(z.read(n).decode("utf-8", "replace") for n in z.namelist())
    if raw[:2] == b"\x1f\x8b":
        try:
            with tarfile.open(fileobj=io.BytesIO(raw), mode="r:gz") as tar:
                members = [m for m in tar.getmembers() if m.isfile()]
                return "\n".join(tar.extractfile(m).read().decode("utf-8", "replace") for m in members)
        except tarfile.TarError:
            return gzip.decompress(raw).decode("utf-8", "replace")
    return raw.decode("utf-8", "replace")


def walk(resolver=None, ns: str = ""):
    """(qualified name, pattern) of every URL pattern, through every include."""
    resolver = resolver or get_resolver()
    for p in resolver.url_patterns:
        if isinstance(p, URLResolver):
            yield from walk(p, f"{ns}{p.namespace}:" if p.namespace else ns)
        elif isinstance(p, URLPattern):
            yield (f"{ns}{p.name}" if p.name else None), p


def params_of(pattern: URLPattern) -> tuple[str, ...]:
    if isinstance(pattern.pattern, RoutePattern):
        return tuple(pattern.pattern.converters)
    return tuple(pattern.pattern.regex.groupindex)


def cases(name: str, params: tuple[str, ...], world) -> list[dict]:
    """Every combination of real values the pattern ``name`` takes (the hidden versions' ids included)."""
    datasets = world["datasets"]
    methods = [world["method"], world["other"]]
    targets = list(Target.objects.values_list("pk", flat=True))
    if not params:
        return [{}]
    if name in ("target-prediction-drawing", "target-prediction-structure"):
        return [{"pk": t, "prediction": p} for p, t in Prediction.objects.values_list("pk", "target_id")]
    if "subset" in params:
        combos = [{"dataset": s.dataset.slug, "subset": s.slug, "definition": d}
                  for s in Subset.objects.select_related("dataset") for d in s.dataset.definitions]
        if "fmt" in params:
            return [{**c, "fmt": f} for c in combos for f in ("csv", "json")]
        if "a" in params:
            a, b = (m.pk for m in methods)
            return [{**c, "a": x, "b": y} for c in combos for x, y in ((a, b), (b, a))]
        return combos
    if "number" in params:
        snapshots = DatasetSnapshot.objects.select_related("dataset")
        return [{"dataset": s.dataset.slug, "number": s.number} for s in snapshots]
    if "method_a" in params:
        return [{"dataset": d.slug, "method_a": x.name, "method_b": y.name} for d in datasets
                for x, y in ((methods[0], methods[1]), (methods[1], methods[0]))]
    if name.startswith("blind-"):
        return [{"day": world["week"].release_date}]
    if name == "pdb-week":
        days = set(Target.objects.filter(release_date__isnull=False).values_list("release_date", flat=True))
        return [{"dataset": "pdb", "day": d} for d in sorted(days)]
    if name == "target-reference-structure":
        return [{"pk": t, "definition": d} for t in targets for d in ("standard", "extended")]
    if name == "comparative-input":
        return [{"pk": t, "kind": "seed", "fmt": "fasta"} for t in targets[:2]]
    values = {
        "dataset": [d.slug for d in datasets],
        "slug": [d.slug for d in datasets],
        "definition": ["standard", "extended"],
        "name": [m.name for m in methods],
        "format": ["json"],
        "token": ["not-a-token"],
        "trial_id": [uuid.uuid4()],
        "uidb64": ["MQ"],
        "position": [1],
        "run": [1],
        "fmt": ["json", "csv"],
    }
    if "pk" in params:
        if name.startswith(("target", "api-target")) or name == "target-detail":
            values["pk"] = targets
        elif name.startswith(("method", "feed-method", "api-method", "owner-")):
            values["pk"] = [m.pk for m in methods]
        elif name.startswith("api-prediction"):
            values["pk"] = list(Prediction.objects.values_list("pk", flat=True))
        elif name.startswith("api-score"):
            values["pk"] = list(Score.objects.values_list("pk", flat=True))
        elif name.startswith("api-ranking"):
            values["pk"] = list(RankingSnapshot.objects.values_list("pk", flat=True))
        else:
            values["pk"] = [1]
    if any(p not in values for p in params):
        return []
    return [dict(zip(params, combo, strict=True)) for combo in product(*(values[p] for p in params))]


#: Query strings asked of every URL (the issue's leaks were behind ``current=false``), and of some more.
QUERIES = ["", "?current=false"]
EXTRA_QUERIES = {
    "api-prediction-list": ["?method=BobFold&current=false", "?current=true",
                            "?status=ok&current=false"],
    "api-score-list": ["?method=BobFold&current=false", "?current=true",
                       "?definition=extended&current=false"],
    "method-predictions": ["?status=ok"],
    "target-detail": ["?definition=standard"],
}


def follow_pages(client: Client, url: str, limit: int = 50):
    """The API list answer and the pages its ``next`` links lead to."""
    for _ in range(limit):
        response = client.get(url)
        yield url, response
        try:
            nxt = response.json().get("next") if response.status_code == 200 else None
        except (ValueError, AttributeError):
            nxt = None
        if not nxt:
            return
        url = nxt


def hidden_rows(name: str, kwargs: dict, response, hidden_ids: set, hidden_scores: set) -> list[str]:
    """A hidden prediction or score answered by id (a detail, a drawing) or listed in an API page."""
    asked = {"api-prediction-detail": (kwargs.get("pk"), hidden_ids),
             "api-score-detail": (kwargs.get("pk"), hidden_scores),
             "target-prediction-drawing": (kwargs.get("prediction"), hidden_ids),
             "target-prediction-structure": (kwargs.get("prediction"), hidden_ids)}.get(name)
    if asked and asked[0] in asked[1] and response.status_code not in (400, 404):  # 400: unknown parameter
        return [f"hidden id answered {response.status_code}"]
    if name in ("api-prediction-list", "api-score-list") and response.status_code == 200:
        key = "id" if name == "api-prediction-list" else "prediction"
        listed = {r[key] for r in response.json()["results"]}
        return [f"hidden prediction {pk} listed" for pk in sorted(listed & hidden_ids)]
    return []


def test_no_public_url_or_api_list_shows_an_unapproved_versions_results(world):
    marks = sentinels(world)
    hidden_ids = {p.pk for ps in world["hidden"].values() for p in ps}
    hidden_scores = set(Score.objects.filter(prediction_id__in=hidden_ids).values_list("pk", flat=True))
    assert hidden_scores  # the hidden versions were scored: their scores exist to leak

    # control: the owner sees both hidden versions through the same API (the marks are real)
    owner = Client()
    owner.force_login(world["bob"])
    asked = "/api/predictions/?method=BobFold&current=false"
    mine = "".join(body_text(r) for _, r in follow_pages(owner, asked))
    assert all(label in mine for label in HIDDEN.values())
    assert sum(m in mine for m in marks) >= 4  # both versions' pair lists as the API writes them

    anon = Client(raise_request_exception=False)  # a page that fails is listed, the walk goes on
    walked, unfilled, leaks, errors = [], [], [], []
    for name, pattern in walk():
        if name is None or name.startswith("admin:") or name in NOT_WALKED:
            continue
        kwargs_list = cases(name, params_of(pattern), world)
        if not kwargs_list:
            unfilled.append(name)
            continue
        walked.append(name)
        for kwargs in kwargs_list:
            url = reverse(name, kwargs=kwargs)
            for query in dict.fromkeys(QUERIES + EXTRA_QUERIES.get(name, [])):
                for asked, response in follow_pages(anon, url + query):
                    if response.status_code == 500:  # /readyz answers 503 without workers
                        errors.append(asked)
                    text = body_text(response)
                    found = [m for m in marks if m in text]
                    found += hidden_rows(name, kwargs, response, hidden_ids, hidden_scores)
                    if found:
                        leaks.append((name, asked, response.status_code, found[:3]))
    assert not unfilled, f"URL patterns the walk cannot fill (add them to cases): {unfilled}"
    leaking = sorted({name for name, *_ in leaks})
    assert not leaks, f"{len(leaks)} answers of {leaking} show an unapproved version: {leaks[:5]}"
    assert not errors, errors[:20]
    # what was walked (the findings among them)
    for expected in ("api-prediction-list", "api-score-list", "target-detail", "target-prediction-drawing",
                     "target-prediction-structure", "blind-week", "blind-predictions", "method-detail",
                     "snapshots:download", "method-comparison-zip", "feed-method-rankings", "method-status"):
        assert expected in walked, expected
    print("walked URL patterns:", " ".join(sorted(set(walked))))


def test_a_self_reported_blind_submission_is_never_frozen_committed_or_published(settings):
    """Issue 36: an upload after the release (the reference is public) is stored for its owner, self-reported,
    and never enters the week's commitment or its published predictions.json."""
    release = dt.date(2024, 1, 10)
    deadline = dt.datetime(2024, 1, 9, 22, 0, tzinfo=dt.UTC)
    at(settings, deadline - dt.timedelta(days=2))
    week = prerelease.ensure_week(release)
    BlindWeek.objects.filter(pk=week.pk).update(status=BlindWeek.Status.OPEN)
    seq = "GGGAAAUCCCGCGAAAGCGAAAGGGAAACCCUUUCGCGAAAGCGCC"
    blind = []
    for k in (1, 2):
        target = Target.objects.create(
            dataset=prerelease.ensure_blind_dataset(), source_id=f"9AB{k}_1", sequence=seq, length=len(seq)
        )
        BlindTarget.objects.create(week=week, target=target, pdb_id=f"9AB{k}", entity_id="1", announced=seq)
        blind.append(target)
    bob, bob_api = token_owner("bob")
    web_method("BobWeb", bob)

    def submit(target, structure):
        return bob_api.post(
            "/api/blind/predictions/",
            {"method": "BobWeb", "target": target.pk, "format": "dot-bracket", "structure": structure},
            content_type="application/json",
        )

    r = submit(blind[0], "." * len(seq))  # before the release: blind, frozen at once
    assert r.status_code == 201 and r.json()["sha256"]
    at(settings, dt.datetime(2024, 1, 10, 1, 0, tzinfo=dt.UTC))  # after the release: the reference is out
    late = "((((((((((((((((((((....))))))))))))))))))))..".ljust(len(seq), ".")[: len(seq)]
    r = submit(blind[1], late)
    assert r.status_code == 201, r.content
    receipt = r.json()
    stored = Prediction.objects.get(pk=receipt["prediction"])
    assert stored.self_reported and not FrozenPrediction.objects.filter(prediction=stored).exists()
    assert receipt["self_reported"] is True and receipt["sha256"] == "" and receipt["late"] is True

    freeze_predictions(week=week)  # the sweep skips it too
    assert not FrozenPrediction.objects.filter(prediction=stored).exists()
    week.refresh_from_db()
    assert commit_week(week, now=dt.datetime(2024, 1, 10, 2, 0, tzinfo=dt.UTC))
    week.refresh_from_db()
    assert str(stored.pk) not in {line["prediction"] for line in parse_commitment(week.commitment)}
    published = Client().get(f"/blind/{release}/predictions.json").json()["predictions"]
    assert [p["prediction"] for p in published] == [Prediction.objects.get(target=blind[0]).pk]
    assert stored.pairs not in json.dumps(published)
