"""Public Atom feeds: ranking changes and new weekly targets (subscribe in any feed reader).

- ``/feeds/rankings.atom`` — one entry per ranking snapshot in which some method's rank changed (or a
  method entered the ranking), listing the changes, linked to that snapshot's ranking page;
  ``/feeds/rankings/<dataset>.atom`` the same for one dataset, ``/feeds/methods/<id>.atom`` the rankings
  in which one public method moved (linked from the dataset and method pages, and announced in their
  ``<head>`` for feed readers).
- ``/feeds/targets.atom`` — one entry per dataset and release week with the targets added (the weekly PDB
  set), linked to the targets.

Rankings hold public methods only, so the feeds never show a development method.

Flat in cost (issue 37): a feed reads each scanned snapshot's ranks from the stored standings
(:class:`comparna.tallies.models.MethodStanding`, one small row per method and snapshot, kept by the tallies
refresh) in one query — never a report (about 10 MB each at 100 methods: reading 300 of them made the feed
take 8-10 s) — and only a snapshot stored since the last refresh has its methods' ranks extracted from its
report by the database. An entry of a provisional ranking says so, with the reasons its ranking page gives
(:func:`comparna.services.pages.ranking_status.snapshot_states`).
"""

from __future__ import annotations

import datetime as dt

from django.contrib.syndication.views import Feed
from django.db.models import Count, Max, OuterRef, Q, Subquery
from django.db.models.fields.json import KeyTransform
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.utils.feedgenerator import Atom1Feed
from django.utils.html import format_html

from comparna.models import Dataset, RankingSnapshot, Target
from comparna.services.pages.common import report_value
from comparna.services.pages.ranking_status import snapshot_states
from comparna.tallies.models import MethodStanding
from predictors.models import Method

MAX_ENTRIES = 30
SCAN = 300


class RankingChangesFeed(Feed):
    feed_type = Atom1Feed
    title = "CompaRNA: ranking changes"
    subtitle = (
        "Each entry is a new ranking in which a method moved (ranked by its wins in paired, target-level "
        "tests against every other method)."
    )
    author_name = "CompaRNA"

    def link(self) -> str:
        return reverse("rankings-index")

    def snapshots(self):
        """The ranking snapshots this feed looks through (newest first)."""
        return RankingSnapshot.objects.select_related("subset", "dataset").order_by("-computed_at", "-pk")

    def keep(self, changes: list[dict]) -> list[dict]:
        """The changes an entry shows (every one here)."""
        return changes

    def items(self) -> list[tuple[RankingSnapshot, list[dict]]]:
        previous = (
            RankingSnapshot.objects.filter(subset=OuterRef("subset"), definition=OuterRef("definition"))
            .filter(Q(computed_at__lt=OuterRef("computed_at"))
                    | Q(computed_at=OuterRef("computed_at"), pk__lt=OuterRef("pk")))
            .order_by("-computed_at", "-pk")
            .values("pk")[:1]
        )
        snaps = list(
            self.snapshots().defer("report", "inputs")
            .annotate(previous_pk=Subquery(previous), n_targets=KeyTransform("targets", "inputs"))[:SCAN]
        )
        ranks = stored_ranks({s.pk for s in snaps} | {s.previous_pk for s in snaps if s.previous_pk})
        out = []
        for snap in snaps:
            after = ranks[snap.pk]
            changes = self.keep(changes_between(ranks.get(snap.previous_pk, {}), after))
            if changes:
                out.append((snap, changes))
            if len(out) >= MAX_ENTRIES:
                break
        states = snapshot_states([snap for snap, _ in out])
        for snap, _ in out:
            snap.state = states[snap.pk]
        return out

    def item_title(self, item) -> str:
        snap, changes = item
        moved = ", ".join(
            f"{c['method']} {c['from'] if c['from'] is not None else 'new'}→{c['to']}" for c in changes[:4]
        )
        more = f" and {len(changes) - 4} more" if len(changes) > 4 else ""
        mark = "" if snap.state["settled"] else " (provisional)"
        return f"{snap.dataset.name} / {snap.subset.name} / {snap.definition}{mark}: {moved}{more}"

    def item_description(self, item) -> str:
        snap, changes = item
        # method names are chosen by their owners: escaped like any other text
        rows = "".join(
            format_html(
                "<li>{}: {} → rank {} of {}</li>",
                c["method"],
                f"rank {c['from']}" if c["from"] is not None else "not ranked",
                c["to"],
                c["of"],
            )
            for c in changes
        )
        targets = snap.n_targets if snap.n_targets is not None else "?"
        state = snap.state
        said = format_html(
            "<p><strong>{}</strong>{}{}</p>",
            "Settled" if state["settled"] else "Provisional",
            ": " + "; ".join(state["reasons"]) if state["reasons"] else "",
            "" if state["settled"] else ". Ranks and scores can still change.",
        )
        return (f"<p>Ranking of {snap.computed_at:%Y-%m-%d %H:%M} UTC on {targets} targets.</p>{said}"
                f"<ul>{rows}</ul>")

    def item_link(self, item) -> str:
        snap, _ = item
        url = reverse("subset-rankings", args=[snap.dataset.slug, snap.subset.slug, snap.definition])
        return f"{url}?snapshot={snap.pk}"

    def item_guid(self, item) -> str:
        return f"comparna:ranking:{item[0].pk}"

    item_guid_is_permalink = False

    def item_updateddate(self, item) -> dt.datetime:
        return item[0].computed_at

    def item_pubdate(self, item) -> dt.datetime:
        return item[0].computed_at


def stored_ranks(pks) -> dict[int, dict[str, int | None]]:
    """``{snapshot pk: {method: rank in its report}}`` from the stored standings, in one query; a snapshot
    without standings yet (stored since the last refresh) from its report's methods, extracted by the
    database (never the whole report)."""
    ranks: dict[int, dict[str, int | None]] = {pk: {} for pk in pks}
    found = set()
    for pk, method, rank in MethodStanding.objects.filter(snapshot__in=list(pks)).values_list(
        "snapshot_id", "method", "report_rank"
    ):
        ranks[pk][method] = rank
        found.add(pk)
    for snap in RankingSnapshot.objects.filter(pk__in=set(pks) - found).defer("report", "inputs"):
        ranks[snap.pk] = {r["method"]: r.get("rank") for r in report_value(snap, "methods") or []}
    return ranks


def changes_between(before: dict[str, int | None], after: dict[str, int | None]) -> list[dict]:
    """Methods whose rank differs between two rankings' ``{method: rank}`` (new ones included), in the newer
    ranking's order (:func:`comparna.owners.notifications.rank_changes`, from stored ranks)."""
    order = sorted(after, key=lambda m: (after[m] is None, after[m] or 0, m.lower()))
    return [
        {"method": m, "from": before.get(m), "to": after[m], "of": len(after)}
        for m in order
        if before.get(m) != after[m]
    ]


class DatasetRankingChangesFeed(RankingChangesFeed):
    """Ranking changes of one dataset's subsets."""

    def get_object(self, request, dataset: str) -> Dataset:
        self.dataset = get_object_or_404(Dataset, slug=dataset)
        return self.dataset

    def title(self, obj: Dataset) -> str:
        return f"CompaRNA: ranking changes on {obj.name}"

    def link(self, obj: Dataset) -> str:
        return reverse("dataset-rankings", args=[obj.slug])

    def snapshots(self):
        return super().snapshots().filter(dataset=self.dataset)


class MethodRankingChangesFeed(RankingChangesFeed):
    """The rankings in which one public method's rank changed (or it entered them)."""

    def get_object(self, request, pk: int) -> Method:
        self.method = get_object_or_404(Method.objects.public(), pk=pk)  # private methods have no feed
        return self.method

    def title(self, obj: Method) -> str:
        return f"CompaRNA: rankings of {obj.name}"

    def subtitle(self, obj: Method) -> str:
        return f"Each entry is a new ranking in which {obj.name}'s rank changed."

    def link(self, obj: Method) -> str:
        return reverse("method-detail", args=[obj.pk])

    def keep(self, changes: list[dict]) -> list[dict]:
        return [c for c in changes if c["method"] == self.method.name]

    def item_guid(self, item) -> str:
        return f"comparna:ranking:{item[0].pk}:method:{self.method.pk}"


class NewTargetsFeed(Feed):
    feed_type = Atom1Feed
    title = "CompaRNA: new weekly targets"
    subtitle = "Targets added to CompaRNA's datasets, one entry per dataset and release week."
    author_name = "CompaRNA"

    def link(self) -> str:
        return reverse("datasets")

    def items(self) -> list[dict]:
        weeks = (
            Target.objects.filter(release_date__isnull=False)
            .values("dataset__slug", "dataset__name", "release_date")
            .annotate(n=Count("id"), added=Max("created_at"))
            .order_by("-release_date", "dataset__slug")[:MAX_ENTRIES]
        )
        out = []
        for week in weeks:
            ids = list(
                Target.objects.filter(dataset__slug=week["dataset__slug"], release_date=week["release_date"])
                .order_by("source_id")
                .values_list("source_id", flat=True)[:50]
            )
            out.append({**week, "ids": ids})
        return out

    def item_title(self, item: dict) -> str:
        return (
            f"{item['n']} new target{'' if item['n'] == 1 else 's'} in {item['dataset__name']}, "
            f"released {item['release_date']:%Y-%m-%d}"
        )

    def item_description(self, item: dict) -> str:
        more = f" and {item['n'] - len(item['ids'])} more" if item["n"] > len(item["ids"]) else ""
        return format_html("<p>{}{}.</p>", ", ".join(item["ids"]), more)

    def item_link(self, item: dict) -> str:
        return reverse("dataset-targets", args=[item["dataset__slug"]])

    def item_guid(self, item: dict) -> str:
        return f"comparna:targets:{item['dataset__slug']}:{item['release_date']:%Y-%m-%d}"

    item_guid_is_permalink = False

    def item_pubdate(self, item: dict) -> dt.datetime:
        return dt.datetime.combine(item["release_date"], dt.time(0, 0), tzinfo=dt.UTC)

    def item_updateddate(self, item: dict) -> dt.datetime:
        return item["added"]
