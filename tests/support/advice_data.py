"""A small benchmark for the advisor's tests (issue 40): four real catalogue methods, a dataset whose tRNA
family subset holds yeast tRNA-Phe (PDB 1EHZ) with its cloverleaf, and a stored ranking of that subset in
which :data:`TOP` lead (CONTRAfold-MFE last)."""

from __future__ import annotations

TRNA_PHE = "GCGGAUUUAGCUCAGUUGGGAGAGCGCCAGACUGAAGAUCUGGAGGUCCUGUGUUCGAUCCACAGAAUUCGCACCA"
TRNA_DB = "(((((((..((((........)))).(((((.......))))).....(((((.......))))))))))))...."
TOP = ("RNAfold-MFE", "LinearFold-V", "RNAfold-MEA")


def build_advice_benchmark() -> dict:
    from comparna.models import PairDefinition, RankingSnapshot, RankingSnapshotSummary, Subset
    from predictors.services import sync_predictors
    from tests.factories import make_dataset, make_target

    sync_predictors(only=[*TOP, "CONTRAfold-MFE"])
    dataset = make_dataset("famset", definitions=(PairDefinition.STANDARD,))
    target = make_target(TRNA_PHE, TRNA_DB, dataset=dataset, definition=PairDefinition.STANDARD)
    subset = Subset.objects.create(dataset=dataset, slug="family-trna", name="tRNA")
    subset.targets.add(target)
    rows = [
        {"method": name, "rank": k + 1, "ranked": True, "rank_low": k + 1, "rank_high": k + 2,
         "decided_mcc": 0.8 - 0.1 * k, "decided_targets": 12, "mcc": 0.8 - 0.1 * k, "targets": 12}
        for k, name in enumerate([*TOP, "CONTRAfold-MFE"])
    ]
    snap = RankingSnapshot.objects.create(
        dataset=dataset, subset=subset, definition=PairDefinition.STANDARD, seed=1, inputs_hash="x" * 64,
        inputs={}, report={"protocol": "target", "clusters": 3, "methods": rows},  # a report's own keys
    )
    RankingSnapshotSummary.objects.create(snapshot=snap, protocol="target", clusters=3, methods=rows)
    return {"target": target, "subset": subset}
