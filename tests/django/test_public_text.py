"""Every public page's visible text is written for a biologist (issue 29, item 6).

A crawl over the deterministic site data: no module path (``predictors.programs.x``), no file name
(``SCIENCE.md``), no library internals (PCG64, blake2b) and no dataset slug standing where its name belongs.
Those internals stay for staff in the admin.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest
from django.urls import reverse

from comparna.models import Dataset, Target
from predictors.models import Method
from tests.web_data import site_fixture  # noqa: F401 - registers the module-scoped `site` fixture

pytestmark = pytest.mark.django_db

MODULE_PATH = re.compile(r"\b(comparna|predictors|ingest)\.[a-z_]+\b")
# a file named on its own (an example path of an author's own program, "/opt/predict.py", is theirs to read)
FILE_NAME = re.compile(r"(?<![/\w.-])[\w-]+\.(py|md|json|txt)\b")
INTERNALS = re.compile(r"PCG64|blake2b|scipy\.|numpy\.|incomplete declaration|contains rnastrand|· ·")


class VisibleText(HTMLParser):
    """The prose a reader sees: everything outside tags, scripts, styles and templates. Code samples
    (``<code>``, ``<pre>``: a method's own command, argv examples for method authors) are code by intent."""

    SKIP = {"script", "style", "template", "head", "code", "pre", "kbd", "samp"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.depth = 0
        self.parts: list[str] = []
        self.headers: list[str] = []
        self._in_th = False

    def handle_starttag(self, tag, attrs):
        if tag in self.SKIP:
            self.depth += 1
        if tag == "th":
            self._in_th = True
            self.headers.append("")

    def handle_endtag(self, tag):
        if tag in self.SKIP and self.depth:
            self.depth -= 1
        if tag == "th":
            self._in_th = False

    def handle_data(self, data):
        if not self.depth:
            self.parts.append(data)
            if self._in_th:
                self.headers[-1] += data


def visible(page: str) -> tuple[str, list[str]]:
    parser = VisibleText()
    parser.feed(page)
    return " ".join(" ".join(parser.parts).split()), [" ".join(h.split()) for h in parser.headers]


def public_urls() -> list[str]:
    """The public pages a biologist walks: one of each kind, every method page."""
    rank = ("rnastrand", "all", "extended")
    ranked = [m["method"] for m in __import__("comparna.models", fromlist=["RankingSnapshot"])
              .RankingSnapshot.objects.filter(dataset__slug="rnastrand", subset__slug="all",
                                              definition="extended").first().report["methods"]]
    a, b = (Method.objects.get(name=n).pk for n in ranked[:2])
    urls = [
        "/",
        reverse("about"),
        reverse("methods"),
        reverse("rankings-index"),
        reverse("dataset-rankings", args=["rnastrand"]),
        reverse("dataset-rankings", args=["pdb"]),
        reverse("subset-rankings", args=rank),
        reverse("ranking-matrix", args=rank),
        reverse("method-comparison", args=[*rank, a, b]),
        reverse("dataset-unseen", args=["rnastrand"]),
        reverse("dataset-families", args=["rnastrand"]),
        reverse("datasets"),
        reverse("targets"),
        reverse("dataset-targets", args=["rnastrand"]),
        reverse("target-detail", args=[Target.objects.filter(dataset__slug="rnastrand").first().pk]),
        "/submit/",
        "/blind/",
    ]
    urls += [reverse("method-detail", args=[m.pk]) for m in Method.objects.filter(visibility="public")]
    return urls


def test_public_pages_name_no_module_file_library_internal_or_slug(client, site):
    # a catalogue method's program names our wrapper module; the page must describe the program instead
    from predictors.models import MethodVersion

    MethodVersion.objects.filter(method__name="GoodFold", is_current=True).update(
        program="predictors.programs.vienna_fold (ViennaRNA RNA module)"
    )
    slugs = {d.slug: d.name for d in Dataset.objects.all() if d.slug.lower() != d.name.lower()}
    problems = []
    for url in public_urls():
        r = client.get(url, follow=True)
        assert r.status_code == 200, url
        problems += problems_of(url, r.content.decode(), slugs)
    assert not problems, "\n".join(f"{u}: {w}" for u, w in sorted(set(problems)))


def problems_of(url: str, page: str, slugs: dict[str, str]) -> list[tuple[str, str]]:
    text, headers = visible(page)
    found = [(url, m.group(0)) for p in (MODULE_PATH, FILE_NAME, INTERNALS) for m in p.finditer(text)]
    found += [(url, f"column {h!r}") for h in headers if len(h) == 1 and h.isalpha() and h != "n"]
    for slug in slugs:
        pattern = rf"(?<![\w/-]){re.escape(slug)}(?![\w/-])"
        found += [(url, f"slug {slug}") for _ in re.finditer(pattern, text)]
    return found


def test_unseen_declarations_and_owner_pages_name_datasets_not_slugs(client, site):
    """A declaration that lists a CompaRNA dataset and is incomplete; an owner's outcomes table."""
    from django.contrib.auth.models import User
    from django.utils import timezone

    from comparna.models import RankingSnapshot, UnseenRanking
    from comparna.owners.models import OwnerProfile

    rnastrand = Dataset.objects.get(slug="rnastrand")
    full = RankingSnapshot.objects.filter(
        dataset=rnastrand, subset__slug="all", definition="extended"
    ).first()
    declaration = {"declared": True, "families": ["tRNA"], "datasets": ["rnastrand"], "complete": False}
    UnseenRanking.objects.create(
        dataset=rnastrand, definition="extended", seed=1, inputs_hash="t" * 64, inputs={},
        report={"methods": [], "verdicts": {}, "full_snapshot": full.pk,
                "full_ranks": {m["method"]: m["rank"] for m in full.report["methods"]},
                "per_method": {"GoodFold": {"declaration": declaration}}, "not_ranked": {},
                "screened_against": ["rnastrand"], "unavailable": []},
    )
    slugs = {d.slug: d.name for d in Dataset.objects.all() if d.slug.lower() != d.name.lower()}
    assert "rnastrand" in slugs
    page = client.get(reverse("unseen", args=["rnastrand", "extended"])).content.decode()
    assert f"trained on RNAs of {rnastrand.name}" in page and "only partly declared" in page
    problems = problems_of("unseen", page, slugs)

    owner = User.objects.create_user("text-owner", "o@x.org", "pw")
    OwnerProfile.objects.create(user=owner, email_confirmed_at=timezone.now(), approved_at=timezone.now())
    method = Method.objects.get(name="MidFold")
    Method.objects.filter(pk=method.pk).update(owner=owner)
    client.force_login(owner)
    for url in (reverse("owner-home"), reverse("owner-method", args=[method.pk]),
                reverse("owner-method-new")):
        r = client.get(url)
        assert r.status_code == 200, url
        problems += problems_of(url, r.content.decode(), slugs)
    outcomes = client.get(reverse("owner-method", args=[method.pk])).content.decode()
    assert f"<td>{rnastrand.name}</td>" in outcomes
    assert not problems, "\n".join(f"{u}: {w}" for u, w in sorted(set(problems)))
