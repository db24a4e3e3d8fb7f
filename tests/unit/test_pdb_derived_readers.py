"""The PDB-derived sets (issue 38) on real rows: the SPOT-RNA test sets (multiplets, two definitions, a chain
listed in two sets), RNA3DB-2D (every bracket type, the component as cluster, unmatched brackets and empty
labels excluded with their reason), bpRNA TS0, and mmCIF files annotated by the project's own pipeline.

Fixtures: ``tests/data/pdb_derived/`` (rows cut from ``data/pdb_derived/``; tests/data/README.md).
"""

from __future__ import annotations

import csv
import hashlib
from pathlib import Path

import pytest

from ingest.datasets.catalogue import DECLARATIONS, data_dirs
from ingest.datasets.pdb_catalogue import BPRNA_TS0, PDB_DERIVED, PDB_HIRES, RNA3DB_2D, SPOT_RNA
from ingest.datasets.pdb_derived import prepare_pdb_derived
from ingest.datasets.pdb_readers import (
    DefinedEntry,
    read_dot_bracket_csv,
    read_grouped_pair_csv,
    read_mmcif_archive,
)
from ingest.datasets.readers import EntryError

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "pdb_derived"
STANDARD = {frozenset("AU"), frozenset("GC"), frozenset("GU")}


def _by_id(items) -> dict:
    return {i.entry_id: i for i in items}


def _pairs_by_bracket(db: str) -> set[tuple[int, int]]:
    """An independent reading of a dot-bracket (one stack per bracket type), for the checks below."""
    opening = {"(": ")", "[": "]", "{": "}", "<": ">"}
    stacks: dict[str, list[int]] = {}
    pairs = set()
    for pos, c in enumerate(db, start=1):
        if c in opening or (c.isalpha() and c.isupper()):
            stacks.setdefault(c, []).append(pos)
        elif c in opening.values() or (c.isalpha() and c.islower()):
            key = {v: k for k, v in opening.items()}.get(c, c.upper())
            pairs.add((stacks[key].pop(), pos))
    return pairs


def test_every_pdb_derived_set_is_declared_with_its_shipped_file():
    assert [d.name for d in PDB_DERIVED] == ["spot-rna-pdb", "pdb-hires", "rna3db-2d", "bprna-ts0"]
    sums = dict(
        reversed(line.split(maxsplit=1))
        for line in (data_dirs()[-1] / "SHA256SUMS").read_text().splitlines() if line.strip()
    )
    for decl in PDB_DERIVED:
        assert DECLARATIONS[decl.name] is decl
        assert sums[decl.source] == decl.sha256
        assert hashlib.sha256((data_dirs()[-1] / decl.source).read_bytes()).hexdigest() == decl.sha256
        assert decl.what_it_is and "blind" in decl.what_it_is_not.lower()
    assert SPOT_RNA.definitions == PDB_HIRES.definitions == ("standard", "extended")
    assert RNA3DB_2D.definitions == BPRNA_TS0.definitions == ("extended",)
    # the small PDB test sets are queued before the larger ones
    assert SPOT_RNA.schedule_priority == PDB_HIRES.schedule_priority < RNA3DB_2D.schedule_priority


def test_spot_rna_rows_keep_multiplets_and_merge_a_chain_listed_in_two_sets():
    with (FIXTURES / "spot_rna_rows.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    entries = _by_id(read_grouped_pair_csv(FIXTURES / "spot_rna_rows.csv", **SPOT_RNA.options))
    assert len(rows) == 7 and len(entries) == 6  # 5NWQ is in TS1 and (again, same labels) in TS_hard
    nwq = entries["TS1_5nwq-1-A"]
    assert nwq.groups == ("TS1", "TS_hard") and nwq.provenance["also_listed_as"] == ["TS_hard_5NWQ-1-A"]
    ah5 = entries["TS1_5ah5-1-D"]
    partners = [p for p in ah5.structure.pairs if 8 in p]
    assert sorted(partners) == [(8, 14), (8, 21)] and ah5.structure.has_multiplets  # a base in two pairs
    for entry in entries.values():
        assert isinstance(entry, DefinedEntry)
        seq = entry.sequence
        standard = set(entry.standard.pairs)
        assert standard <= set(entry.structure.pairs)
        assert all(frozenset((seq[i - 1], seq[j - 1])) in STANDARD for i, j in standard)
        assert all(frozenset((seq[i - 1], seq[j - 1])) not in STANDARD
                   for i, j in set(entry.structure.pairs) - standard)
    assert len(ah5.standard.pairs) < len(ah5.structure.pairs)
    assert {"TS2_rnaformer-633059", "TS3_rnaformer-633076"} <= set(entries)  # no PDB chain given
    assert nwq.pdb_id == "5NWQ" and entries["TS2_2M8K-2D"].pdb_id == "2M8K"
    assert entries["TS2_rnaformer-633059"].pdb_id == ""


def test_spot_rna_preparation_excludes_pseudouridine_and_ranks_pk_per_definition():
    prep = prepare_pdb_derived(SPOT_RNA, FIXTURES / "spot_rna_rows.csv")
    excluded = {e.entry_id: e for e in prep.excluded}
    assert excluded["TS1_1ehz-1-A"].reason == "non_acgu" and "'N'" in excluded["TS1_1ehz-1-A"].detail
    kept = {k.entry_id: k for k in prep.kept}
    assert len(kept) + len(excluded) == 6
    assert {"all", "ts1", "ts-hard"} <= set(kept["TS1_5nwq-1-A"].subsets)
    for k in kept.values():
        entry = k.entry
        assert ("pk-extended" in k.subsets) == entry.structure.is_pseudoknotted
        assert ("pk-standard" in k.subsets) == entry.standard.is_pseudoknotted
    specs = {s.slug: s for s in SPOT_RNA.subsets()}
    assert specs["pk-standard"].definition == "standard" and specs["pk-extended"].definition == "extended"
    assert [s for s in ("ts1", "ts2", "ts3", "ts-hard") if s in specs] == ["ts1", "ts2", "ts3", "ts-hard"]


def test_rna3db_pairs_are_read_with_every_bracket_type_and_the_component():
    with (FIXTURES / "rna3db_rows.csv").open() as fh:
        rows = {f"{r['PDB_ID']}_{r['Chain_ID']}": r for r in csv.DictReader(fh)}
    items = _by_id(read_dot_bracket_csv(FIXTURES / "rna3db_rows.csv", **RNA3DB_2D.options))
    lx5 = items["4lx5_A"]
    db = rows["4lx5_A"]["Structure_Corrected"]
    assert "[" in db and set(lx5.structure.pairs) == _pairs_by_bracket(db)
    square = {(i, j) for i, j in lx5.structure.pairs if db[i - 1] == "["}
    # ``((((((((((..((((((......[[.))))))[.....)]((((((]].....)))))))..)))))))))``, read by hand
    assert square == {(25, 49), (26, 48), (34, 41)} and lx5.structure.is_pseudoknotted
    assert lx5.cluster == "RNA3DB component_3" and lx5.groups == ("valid_set",)
    bad = items["3ds7_B"]
    assert isinstance(bad, EntryError) and "'{' is never closed" in bad.message


def test_rna3db_preparation_records_every_exclusion_with_its_reason():
    prep = prepare_pdb_derived(RNA3DB_2D, FIXTURES / "rna3db_rows.csv")
    excluded = {e.entry_id: e for e in prep.excluded}
    assert excluded["3ds7_B"].reason == "malformed"
    assert excluded["1duh_A"].reason == "no_pairs"  # a 45-nt hairpin whose labels are empty
    # 1drz_B and 1vc5_B are (98 %) copies of 1sj3_R in the same component
    assert {excluded[e].reason for e in ("1drz_B", "1vc5_B")} == {"redundant"}
    assert {excluded[e].representative for e in ("1drz_B", "1vc5_B")} == {"1sj3_R"}
    kept = {k.entry_id: k for k in prep.kept}
    assert set(kept) == {"4lx5_A", "1sj3_R"}
    assert set(kept["4lx5_A"].subsets) == {"all", "valid", "short", "pk"}
    assert kept["1sj3_R"].entry.cluster == "RNA3DB component_26"
    assert set(RNA3DB_2D.reasons) >= {"malformed", "no_pairs", "redundant", "non_acgu", "too_short"}


def test_bprna_ts0_rows():
    items = list(read_grouped_pair_csv(FIXTURES / "bprna_ts0_rows.csv", **BPRNA_TS0.options))
    assert [i.entry_id for i in items] == ["bpRNA_TS0_633123", "bpRNA_TS0_633124", "bpRNA_TS0_633125"]
    first = items[0]
    assert first.standard is None and first.length == 110 and len(first.structure.pairs) == 26
    assert (2, 109) in first.structure.pairs and first.groups == ("bpRNA_TS0",)
    assert first.pdb_id == ""  # an RNAformer row number, not a PDB entry


@pytest.fixture(scope="module")
def hires():
    return _by_id(read_mmcif_archive(FIXTURES / "hires_mmcif.tar.gz"))


def test_an_mmcif_is_annotated_here_into_both_definitions(hires):
    chain = hires["1L2X_1_A:A"]
    assert chain.length == 27 and not chain.exclusion and chain.pdb_id == "1L2X"
    standard, extended = set(chain.standard.pairs), set(chain.structure.pairs)
    assert len(standard) == 8 and len(extended) == 14 and standard < extended
    seq = chain.sequence
    assert all(frozenset((seq[i - 1], seq[j - 1])) in STANDARD for i, j in standard)
    classes = {(i, j): lw for i, j, lw in chain.extended_classes}
    assert {classes[p] for p in standard} == {"cWW"}  # standard pairs are cWW by geometry, not by letters
    assert any(lw != "cWW" for p, lw in classes.items() if p not in standard)
    assert chain.provenance["annotator"].startswith("RNApolis")


def test_chains_the_pdb_rules_exclude_carry_the_reason(hires):
    assert "too short" in hires["1J6S_1_A:A"].exclusion
    prep = prepare_pdb_derived(PDB_HIRES, FIXTURES / "hires_mmcif.tar.gz")
    assert [k.entry_id for k in prep.kept] == ["1L2X_1_A:A"]
    assert {(e.entry_id, e.reason) for e in prep.excluded} == {("1J6S_1_A:A", "pdb_rules")}
    assert set(prep.kept[0].subsets) >= {"all"}


def test_the_fixtures_are_listed_with_their_checksums():
    readme = (FIXTURES.parent / "README.md").read_text()
    section = readme[readme.index("## pdb_derived/") :]
    for path in sorted(FIXTURES.iterdir()):
        assert f"`{hashlib.sha256(path.read_bytes()).hexdigest()}` (pdb_derived/{path.name})" in section
        assert f"`{path.name}`" in section


def test_make_run_imports_every_pdb_derived_set_after_the_workers_start():
    run = (Path(__file__).resolve().parents[2] / "scripts" / "run.sh").read_text()
    loop = run[run.index("for name in spot-rna-pdb") :]
    assert loop.index("import_dataset") < loop.index("done )")
    assert run.index("worker -Q default") < run.index("for name in spot-rna-pdb")
    assert run.index("import_dataset archiveii") < run.index("queue_predictions") < run.index("for name in")
    names = loop[len("for name in ") : loop.index(";")].split()
    assert names == [d.name for d in PDB_DERIVED]
