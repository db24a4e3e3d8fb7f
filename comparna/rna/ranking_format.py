"""Plain-text tables of a ranking report (``manage.py rank``) and the side-by-side comparison of the two
protocols."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from comparna.rna import thresholds
from comparna.rna.ranking_report import protocol_view

#: What each reason of a "?" means (SCIENCE.md §5), for pages, the API and the text report.
REASON_TEXT = {
    "few": f"fewer than {thresholds.MIN_COMMON} common targets",
    "floor": "the subset has too few families for any family-level verdict (its floor)",
    "direction": "significant, but the mean difference favours the other method (one better on most "
    "targets, the other better on average)",
    "undecided": "the exact p-value could not be placed on one side of its threshold",
    "open": "neither a win nor an equivalence yet: more targets or families would decide it",
}


def floor_sentence(floor: Mapping | None) -> str | None:
    """The subset floor said once: why no family-level verdict is possible (None when it does not fire)."""
    if not floor or not floor.get("fires"):
        return None
    return (
        f"No family-level verdict is possible here: with {floor['families']} families and {floor['pairs']} "
        f"tested pairs the smallest Holm-adjusted p-value is {floor['pairs']}·2/2^{floor['families']} = "
        f"{floor['floor']:.2g}, not below α = {floor['alpha']:g}; {floor['families_needed']} families would "
        "be needed."
    )


def describe_decisions(decisions: Mapping | None) -> dict | None:
    """:func:`comparna.rna.ranking_report.decision_summary` in words: ``{"summary", "floor", "reasons":
    [{"reason", "pairs", "text"}]}`` (None for a report stored before issue 35)."""
    if not decisions:
        return None
    pairs = decisions["pairs"]

    def part(count: int) -> str:
        return f"{count} ({count / pairs:.0%})" if pairs else str(count)

    summary = (
        f"{pairs} pair{'' if pairs == 1 else 's'}: {part(decisions['won'])} won, "
        f"{part(decisions['equal'])} equivalent, {part(decisions['unknown'])} undecided"
    )
    reasons = [
        {"reason": code, "pairs": count, "text": REASON_TEXT.get(code, code)}
        for code, count in decisions.get("reasons", {}).items()
    ]
    return {"summary": summary, "floor": floor_sentence(decisions.get("floor")), "reasons": reasons}


def format_report(report: Mapping) -> str:
    """A plain-text table of a :func:`ranking_report` view (ranks with their interval, W/L/D/?, the MCC on
    the targets that decided the order with their n, then the verdict matrix), headed by its protocol."""
    methods = [row["method"] for row in report["methods"]]
    width = max([len(name) for name in methods] + [6])
    target_view = report.get("protocol") == "target"
    label = report.get("protocol_label") or thresholds.PROTOCOL_2013_LABEL
    lines = [f"verdicts: {label}"]
    if not target_view:
        lines.append(
            "  (a view to reproduce the 2013 tables: its p-value shrinks with the 40 resamples, not with the "
            "evidence; not the headline)"
        )
    else:
        lines.append(f"  families (clusters): {report.get('clusters')}")
        described = describe_decisions(report.get("decisions"))
        if described:
            lines.append(f"  decided: {described['summary']}")
            if described["floor"]:
                lines.append(f"  {described['floor']}")
            for entry in described["reasons"]:
                lines.append(f"    ? {entry['pairs']:>4}  {entry['reason']}: {entry['text']}")
    head = f"{'rank':>4}  {'95% int':>7}  " if target_view else f"{'rank':>4}  "
    tail = (
        f"{'MCC':>6} {'n':>5}  (mean per-target MCC on the targets that decided the order)"
        if target_view
        else f"{'MCC':>6}  targets"
    )
    net = f"{'net':>4} " if target_view else ""
    lines.append(f"{head}{'method':<{width}}  {net}{'wins':>4} {'loss':>4} {'draw':>4} {'?':>4}  {tail}")
    for row in report["methods"]:
        start = f"{row['rank']:>4}  "
        if target_view:
            interval = f"{row.get('rank_low', row['rank'])}-{row.get('rank_high', row['rank'])}"
            start += f"{interval:>7}  "
            value = row.get("decided_mcc")
            n = row.get("decided_targets", 0)
            metric = f"{value:>6.3f} {n:>5}" if value is not None else f"{'-':>6} {0:>5}"
        else:
            metric = f"{row['mcc']:>6.3f}  {row['targets']}"
        net = f"{row['wins'] - row['losses']:>4} " if target_view else ""
        lines.append(
            f"{start}{row['method']:<{width}}  {net}{row['wins']:>4} {row['losses']:>4} "
            f"{row['draws']:>4} {row['unknown']:>4}  {metric}"
        )
    lines.append("")
    if target_view:
        lines.append(
            "verdicts (row vs column: + row wins, - row loses, = equivalent within "
            f"±{thresholds.EQUIVALENCE_DELTA:g} MCC, ? undecided: see the reasons above)"
        )
    else:
        lines.append("verdicts (row vs column: + row wins, - row loses, = draw, ? under 10 common targets)")
    abbrev = [str(i + 1) for i in range(len(methods))]
    lines.append(" " * (width + 6) + " ".join(f"{a:>3}" for a in abbrev))
    for i, a in enumerate(methods):
        cells = ["  ." if a == b else f"{report['verdicts'][a][b]:>3}" for b in methods]
        lines.append(f"{abbrev[i]:>3}  {a:<{width}} " + " ".join(cells))
    conditional = report.get("within_families") if target_view else None
    if conditional:
        lines.append("")
        lines.append(f"within these families (conditional: {conditional['label']})")
        for row in conditional["methods"]:
            lines.append(
                f"{row['rank']:>4}  {row['method']:<{width}}  {row['net']:>4} {row['wins']:>4} "
                f"{row['losses']:>4} {row['draws']:>4} {row['unknown']:>4}"
            )
    if report.get("robustness"):
        lines.append("")
        n = report.get("robustness_n") or {}
        lines.append(
            "robustness ranking (missing predictions = no base pairs; pooled MCC"
            + (f" over {n['targets']} targets in {n['clusters']} families" if n else "") + ")"
        )
        for row in report["robustness"]:
            interval = f"{row.get('rank_low', row['rank'])}-{row.get('rank_high', row['rank'])}"
            name = f"{row['method']:<{width}}"
            lines.append(f"{row['rank']:>4}  {interval:>7}  {name}  {row['mcc']:>6.3f}  {row['targets']}")
    lines.append("")
    lines.append(f"seed {report['seed']}")
    return "\n".join(lines)


_PRIMARY_KEYS = ("method", "rank", "rank_low", "rank_high", "wins", "decided_mcc", "decided_targets")
_KEYS_2013 = ("method", "rank", "wins", "mcc")


def compare_protocols(report: Mapping, *, top: int = 10) -> list[dict]:
    """The top methods under the primary verdict and under the CompaRNA 2013 protocol, side by side:
    ``[{"position", "target": {method, rank, rank_low, rank_high, wins, decided_mcc, decided_targets},
    "protocol_2013": {method, rank, wins, mcc}}]``."""
    primary = protocol_view(report, "target") or {"methods": []}
    old = protocol_view(report, "2013") or {"methods": []}
    out = []
    for k in range(min(top, max(len(primary["methods"]), len(old["methods"])))):
        a = primary["methods"][k] if k < len(primary["methods"]) else None
        b = old["methods"][k] if k < len(old["methods"]) else None
        out.append(
            {
                "position": k + 1,
                "target": None if a is None else {key: a.get(key) for key in _PRIMARY_KEYS},
                "protocol_2013": None if b is None else {key: b.get(key) for key in _KEYS_2013},
            }
        )
    return out


def format_comparison(rows: Sequence[Mapping]) -> str:
    """:func:`compare_protocols` as a plain-text table."""
    lines = [
        f"{'#':>3}  {'target-level verdict (primary)':<44}  {thresholds.PROTOCOL_2013_LABEL}",
        f"{'':>3}  {'method':<20} {'rank':>4} {'95% int':>7} {'wins':>4} {'MCC(n)':>10}  "
        f"{'method':<20} {'rank':>4} {'wins':>4} {'MCC':>6}",
    ]
    for row in rows:
        a, b = row["target"], row["protocol_2013"]
        left = " " * 55
        if a:
            mcc = "-" if a["decided_mcc"] is None else f"{a['decided_mcc']:.3f}({a['decided_targets']})"
            interval = f"{a['rank_low']}-{a['rank_high']}"
            left = f"{a['method'][:20]:<20} {a['rank']:>4} {interval:>7} {a['wins']:>4} {mcc:>10}"
        right = f"{b['method'][:20]:<20} {b['rank']:>4} {b['wins']:>4} {b['mcc']:>6.3f}" if b else ""
        lines.append(f"{row['position']:>3}  {left}  {right}")
    return "\n".join(lines)
