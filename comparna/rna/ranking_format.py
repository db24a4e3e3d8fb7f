"""Plain-text tables of a ranking report (``manage.py rank``) and the side-by-side comparison of the two
protocols."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from comparna.rna import thresholds
from comparna.rna.ranking_report import protocol_view


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
    head = f"{'rank':>4}  {'95% int':>7}  " if target_view else f"{'rank':>4}  "
    tail = (
        f"{'MCC':>6} {'n':>5}  (mean per-target MCC on the targets that decided the order)"
        if target_view
        else f"{'MCC':>6}  targets"
    )
    lines.append(f"{head}{'method':<{width}}  {'wins':>4} {'loss':>4} {'draw':>4} {'?':>4}  {tail}")
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
        lines.append(
            f"{start}{row['method']:<{width}}  {row['wins']:>4} {row['losses']:>4} "
            f"{row['draws']:>4} {row['unknown']:>4}  {metric}"
        )
    lines.append("")
    if target_view:
        lines.append(
            "verdicts (row vs column: + row wins, - row loses, = draw, ? under 10 common targets or too few "
            "to detect the margin)"
        )
    else:
        lines.append("verdicts (row vs column: + row wins, - row loses, = draw, ? under 10 common targets)")
    abbrev = [str(i + 1) for i in range(len(methods))]
    lines.append(" " * (width + 6) + " ".join(f"{a:>3}" for a in abbrev))
    for i, a in enumerate(methods):
        cells = ["  ." if a == b else f"{report['verdicts'][a][b]:>3}" for b in methods]
        lines.append(f"{abbrev[i]:>3}  {a:<{width}} " + " ".join(cells))
    if report.get("robustness"):
        lines.append("")
        lines.append("robustness ranking (missing predictions = no base pairs)")
        for row in report["robustness"]:
            lines.append(f"{row['rank']:>4}  {row['method']:<{width}}  {row['mcc']:>6.3f}  {row['targets']}")
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
