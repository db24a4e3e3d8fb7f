"""The declared PDB-derived benchmark sets (issue 38), shipped under ``data/pdb_derived/``
(``data/README.md``: source, licence, citation, sha256). None is blind: every structure was public
before the current methods were trained.
"""

from __future__ import annotations

from ingest.datasets.declaration import LengthBin, SubsetSpec
from ingest.datasets.pdb_derived import PdbDerivedDeclaration

__all__ = ["BPRNA_TS0", "PDB_DERIVED", "PDB_HIRES", "RNA3DB_2D", "SPOT_RNA"]

_NOT_BLIND = "Not blind: the structures were public before the methods were trained."

SPOT_RNA = PdbDerivedDeclaration(
    name="spot-rna-pdb",
    title="SPOT-RNA PDB test sets (TS1, TS2, TS3, TS_hard)",
    short_title="SPOT-RNA PDB",
    description=(
        "The PDB test sets of SPOT-RNA and SPOT-RNA2 (Singh et al. 2019, 2021): TS1 (X-ray), TS2 (NMR), TS3 "
        "and TS_hard, labels by DSSR with non-canonical pairs and bases in several pairs, ranked under both "
        "definitions (standard: the labelled A-U, G-C, G-U pairs; extended: every labelled pair). Filters as "
        "RNA STRAND's (length >= 20, A/C/G/U only: pseudouridine written N is left out, CD-HIT-EST 90 %). "
        + _NOT_BLIND
    ),
    source="pdb_derived/spot_rna_pdb_testsets.csv.gz",
    sha256="b5e1ad4501185ba4fc3dcddf87fb38578a3afb46a3ee799ddb33c55537ec317f",
    fmt="grouped-pair-csv",
    options={"keep_columns": ("rnaformer_id", "pdb_chain", "pdb_chain_source")},
    citation=(
        "Singh J, Hanson J, Paliwal K, Zhou Y. RNA secondary structure prediction using an ensemble of "
        "two-dimensional deep neural networks and transfer learning. Nat Commun 10:5407 (2019); converted "
        "from automl/RNAformer (commit a124604)"
    ),
    url="https://doi.org/10.1038/s41467-019-13395-9",
    licence="Apache-2.0 (automl/RNAformer; data/pdb_derived/LICENSE.rnaformer); DSSR labels of PDB entries.",
    provenance=(
        "spot_rna_pdb_testsets.csv.gz (set, JSON pair list per chain, 1-based, multiplets kept); rows with "
        "the same sequence and pairs in two sets (28 TS_hard rows are TS1 chains) are one target in both."
    ),
    source_subsets={
        "TS1": SubsetSpec("ts1", "TS1", "SPOT-RNA TS1: 67 X-ray chains (as published)."),
        "TS2": SubsetSpec("ts2", "TS2", "SPOT-RNA TS2: 39 NMR chains (as published)."),
        "TS3": SubsetSpec("ts3", "TS3", "SPOT-RNA TS3: 19 chains (as published)."),
        "TS_hard": SubsetSpec("ts-hard", "TS_hard", "SPOT-RNA2 TS_hard: 28 chains (as published)."),
    },
    definitions=("standard", "extended"),
    schedule_priority=1,
    what_it_is="The PDB test sets every deep-learning paper reports (DSSR labels, non-canonical pairs kept).",
    what_it_is_not="Not blind, not annotated here: labels by DSSR, chosen by the SPOT-RNA authors.",
)

PDB_HIRES = PdbDerivedDeclaration(
    name="pdb-hires",
    title="PDB high-resolution structures (annotated here)",
    short_title="PDB ≤ 1.5 Å",
    description=(
        "81 representative RNA 3D structures solved at 1.5 Å or better (RNAsolo, BGSU release 3.286), each "
        "chain extracted and annotated by this project's 3D-to-2D pipeline (gemmi, RNApolis; the weekly PDB "
        "set's rules) into the standard and the extended definition. " + _NOT_BLIND
    ),
    source="pdb_derived/rnabench_3d_mmcif.tar.gz",
    sha256="307e916e56c211f47c0cc807885f4ff13056a3f8baedd9d0b453b52b58a0a2ff",
    fmt="mmcif-archive",
    citation=(
        "Runge F, Farid K, Franke JKH, Hutter F. RnaBench: a comprehensive library for in silico RNA "
        "modelling. bioRxiv (2024); Adamczyk B et al. RNAsolo. Bioinformatics 38:3668 (2022)"
    ),
    url="https://doi.org/10.1101/2024.01.09.574794",
    licence="Apache-2.0 (automl/RnaBench; data/pdb_derived/LICENSE.rnabench); coordinates: PDB data (CC0).",
    provenance=(
        "rnabench_3d_mmcif.tar.gz (automl/RnaBench a818a00, data/3D.tar.gz): mmCIF coordinates only; pairs "
        "annotated here with RNApolis, pairs with other strands recorded but not in the reference."
    ),
    min_length=21,
    definitions=("standard", "extended"),
    schedule_priority=1,
    what_it_is="Real high-resolution structures run through this project's own 3D → 2D annotation.",
    what_it_is_not="Not blind, not the weekly PDB set: a fixed set of old entries (labels: RNApolis, here).",
)

_SHORT = LengthBin("short", "Short (20-200 nt)", 20, 200, "Length 20 to 200 nucleotides.", "")
_MEDIUM = LengthBin("medium", "Medium (201-800 nt)", 201, 800, "Length 201 to 800 nucleotides.", "")
_LONG = LengthBin("long", "Long (> 800 nt)", 801, None, "Longer than 800 nucleotides.", "")

RNA3DB_2D = PdbDerivedDeclaration(
    name="rna3db-2d",
    title="RNA3DB-2D",
    short_title="RNA3DB-2D",
    description=(
        "One representative chain per RNA3DB cluster (release 2024-12-04), base pairs annotated by RNApolis "
        "(the RNA3DB-2D-Structures repository), split train / valid / test by RNA3DB component; the "
        "component is each target's cluster in every clustered statistic. Pairs read from the dot-bracket "
        "with every bracket type; rows with unmatched brackets and chains without a pair are left out with "
        "their reason. Filters as RNA STRAND's. " + _NOT_BLIND
    ),
    source="pdb_derived/rna3db_2d_05_final_selected_dataset.csv.gz",
    sha256="28d2fed1905320513e6e913b48dc1d940a8678a97548f599373aecd41a02f901",
    fmt="dot-bracket-csv",
    options={
        "keep_columns": ("component_x", "dataset", "release_date_x", "structure_method_x", "Resolution"),
    },
    citation=(
        "Szikszai M, Magnus M, Sanghi S, Kadyan S, Bouatta N, Rivas E. RNA3DB: a structurally-dissimilar "
        "dataset split for training and benchmarking deep learning models for RNA structure prediction. "
        "J Mol Biol 436:168552 (2024); RNA3DB-2D-Structures (ZYZhang17, commit 23d38d1)"
    ),
    url="https://doi.org/10.1016/j.jmb.2024.168552",
    licence="MIT (ZYZhang17/RNA3DB-2D-Structures; data/pdb_derived/LICENSE.rna3db_2d).",
    provenance=(
        "05_final_selected_dataset.csv: Sequence_Canonical and Structure_Corrected (dot-bracket, ()[]{}<> "
        "and letters), split in column dataset, RNA3DB component in component_x."
    ),
    source_subsets={
        "train_set": SubsetSpec("train", "Train split", "RNA3DB-2D's training split (by component)."),
        "valid_set": SubsetSpec("valid", "Validation split", "RNA3DB-2D's validation split (by component)."),
        "test_set": SubsetSpec("test", "Test split", "RNA3DB-2D's test split: components of no other split."),
    },
    length_bins=(_SHORT, _MEDIUM, _LONG),
    cluster_name="RNA3DB component",
    schedule_priority=2,
    what_it_is="PDB chains split by RNA3DB component: the test split shares no structural family with "
               "the rest (RNApolis labels).",
    what_it_is_not="Not blind, and its split is RNA3DB's, not the methods' training data.",
)

BPRNA_TS0 = PdbDerivedDeclaration(
    name="bprna-ts0",
    title="bpRNA TS0",
    short_title="bpRNA TS0",
    description=(
        "bpRNA-1m TS0 (Danaee et al. 2018), the test split most learned methods report (1305 RNAs, "
        "comparative structures from bpRNA, non-canonical pairs kept). Families from Rfam assignment. "
        "Filters as RNA STRAND's. Comparative, not PDB-derived; " + _NOT_BLIND.lower()
    ),
    source="pdb_derived/bprna_ts0.csv.gz",
    sha256="7875b078b8ac69af308cf56f113dc6b4e1f2831b83f5fef6d782b2d9e4e0ac8c",
    fmt="grouped-pair-csv",
    options={
        "id_column": "rnaformer_id", "standard": False, "pdb_ids": False, "keep_columns": ("rnaformer_id",),
    },
    citation=(
        "Danaee P et al. bpRNA: large-scale automated annotation and analysis of RNA secondary structure. "
        "Nucleic Acids Res 46:5381 (2018); TS0 split of Singh et al. 2019; converted from automl/RNAformer"
    ),
    url="https://doi.org/10.1093/nar/gky285",
    licence="Apache-2.0 (automl/RNAformer; data/pdb_derived/LICENSE.rnaformer); bpRNA's sources keep theirs.",
    provenance="bprna_ts0.csv.gz (JSON pair list per RNA, 1-based), the RNAformer copy of bpRNA TS0.",
    schedule_priority=2,
    what_it_is="The comparative test split (bpRNA TS0) most learned methods report.",
    what_it_is_not="Not PDB-derived and not blind: Rfam-derived structures, many in other training sets.",
)

#: In page order (the home page's "PDB-derived" list).
PDB_DERIVED = (SPOT_RNA, PDB_HIRES, RNA3DB_2D, BPRNA_TS0)
