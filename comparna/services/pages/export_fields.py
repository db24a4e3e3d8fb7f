"""The names of a ranking's numbers in its CSV and JSON downloads and in the API: one name per definition.

- ``mean_mcc`` (with ``mean_mcc_n``): the mean per-target MCC on exactly the targets that decided the
  method's place (the union of its pairwise sets with a win, loss or draw), n their number — the "mean MCC
  (n)" of every page;
- ``pooled_*_common``: the counts pooled over the common targets (every ranked method scored them), then the
  formula — "pooled MCC" on the pages;
- ``pooled_mcc_own_targets``: the counts pooled over the method's own scored targets;
- ``common_mean_mcc`` (``_low``/``_high``, ``_n``): the mean per-target MCC over the common targets with its
  95 % bootstrap interval — the "common-target mean MCC" column.

The JSON download keeps the names it had before (:data:`DEPRECATED_FIELDS`) beside the new ones.
"""

from __future__ import annotations

__all__ = ["DEPRECATED_FIELDS", "EXPORT_COLUMNS", "api_row", "named_numbers"]

EXPORT_COLUMNS = (
    "rank",
    "rank_low",
    "rank_high",
    "ranked",
    "method",
    "wins",
    "losses",
    "draws",
    "unknown",
    "mean_mcc",
    "mean_mcc_n",
    "pooled_mcc_common",
    "pooled_sensitivity_common",
    "pooled_ppv_common",
    "pooled_mcc_own_targets",
    "common_mean_mcc",
    "common_mean_mcc_low",
    "common_mean_mcc_high",
    "common_mean_mcc_n",
    "targets_scored",
    "targets_total",
    "protocol",
    "settled",
)

#: Old JSON name -> the name that replaces it (same value).
DEPRECATED_FIELDS = {
    "decided_mcc": "mean_mcc",
    "decided_targets": "mean_mcc_n",
    "mcc_common": "pooled_mcc_common",
    "sensitivity_common": "pooled_sensitivity_common",
    "ppv_common": "pooled_ppv_common",
    "mcc_own_targets": "pooled_mcc_own_targets",
}


def named_numbers(row: dict) -> dict:
    """The numbers of one ranking row (:func:`comparna.services.pages.rankings.ranking_rows`) under their
    names, followed by the deprecated names of the same values."""
    common = row.get("common") or {}
    ci = row.get("mean_mcc") or {}
    out = {
        "mean_mcc": row.get("decided_mcc"),
        "mean_mcc_n": row.get("decided_targets"),
        "pooled_mcc_common": common.get("mcc"),
        "pooled_sensitivity_common": common.get("sensitivity"),
        "pooled_ppv_common": common.get("ppv"),
        "pooled_mcc_own_targets": row.get("mcc"),
        "common_mean_mcc": ci.get("mean"),
        "common_mean_mcc_low": ci.get("low"),
        "common_mean_mcc_high": ci.get("high"),
        "common_mean_mcc_n": ci.get("n"),
    }
    out.update({old: out[new] for old, new in DEPRECATED_FIELDS.items()})
    return out


def api_row(row: dict, common: dict | None = None) -> dict:
    """A report row for the API: the row as stored, with the numbers under the names of the downloads
    (``mean_mcc``/``mean_mcc_n``, ``pooled_mcc_own_targets``, and ``pooled_mcc_common`` when the report
    stores the common targets' pooled scores)."""
    out = {
        **row,
        "mean_mcc": row.get("decided_mcc"),
        "mean_mcc_n": row.get("decided_targets"),
        "pooled_mcc_own_targets": row.get("mcc"),
    }
    if common is not None:
        out["pooled_mcc_common"] = (common.get(row.get("method")) or {}).get("mcc")
    return out
