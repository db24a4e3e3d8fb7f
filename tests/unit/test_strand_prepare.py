"""RNA STRAND filters, subsets and the preparation pipeline (real cd-hit-est), through its declaration."""

from __future__ import annotations

import random
import re
import tarfile
import time

import pytest

from ingest.datasets.catalogue import RNASTRAND
from ingest.datasets.declaration import prepare_dataset, screen_entry
from ingest.datasets.readers import read_source


def strand_subsets(length: int, pk: bool) -> list[str]:
    return RNASTRAND.subsets_of(length, pk, "")


def prepare_rnastrand(path, **kwargs):
    return prepare_dataset(RNASTRAND, path, **kwargs)


def test_declared_subsets_are_the_rna_strand_subsets():
    # The subsets RNA STRAND has had since the first import (slug, name, description, in page order).
    assert [(s.slug, s.name, s.description) for s in RNASTRAND.subsets()] == [
        ("all", "All RNAs", "Every RNA STRAND entry that passed the filters."),
        ("short", "Short (20-200 nt)", "Length 20 to 200 nucleotides."),
        ("medium", "Medium (201-800 nt)", "Length 201 to 800 nucleotides."),
        ("long", "Long (> 800 nt)", "Longer than 800 nucleotides."),
        ("pk", "Pseudoknotted", "The reference has at least two crossing pairs."),
        ("pk-short", "Pseudoknotted, short", "Pseudoknotted and 20 to 200 nucleotides."),
        ("pk-medium", "Pseudoknotted, medium", "Pseudoknotted and 201 to 800 nucleotides."),
        ("pk-long", "Pseudoknotted, long", "Pseudoknotted and longer than 800 nucleotides."),
    ]


@pytest.mark.parametrize(
    ("length", "pk", "expected"),
    [
        (20, False, ["all", "short"]),
        (200, False, ["all", "short"]),
        (201, True, ["all", "medium", "pk", "pk-medium"]),
        (800, False, ["all", "medium"]),
        (801, True, ["all", "long", "pk", "pk-long"]),
        (76, True, ["all", "short", "pk", "pk-short"]),
    ],
)
def test_subsets(length, pk, expected):
    assert strand_subsets(length, pk) == expected


def test_subsets_refuse_short():
    with pytest.raises(ValueError):
        strand_subsets(19, False)


def bpseq(entry_id: str, seq: str, pairs: dict[int, int] | None = None) -> str:
    pairs = pairs or {}
    partner = {**pairs, **{j: i for i, j in pairs.items()}}
    head = f"# File {entry_id}.ct\n# RNA SSTRAND database\n# External source: Rfam database\n"
    return head + "".join(f"{i} {b} {partner.get(i, 0)}\n" for i, b in enumerate(seq, start=1))


def entry(tmp_path, seq: str, entry_id: str = "RFA_00001", text: str | None = None):
    folder = tmp_path / entry_id
    folder.mkdir()
    (folder / f"{entry_id}.bpseq").write_text(text or bpseq(entry_id, seq))
    (item,) = read_source(folder, RNASTRAND.fmt, RNASTRAND.options)
    return item


def test_filters(tmp_path):
    ok = "acgtACGUacgu" * 2  # 24 nt, lower case and T
    seq, why = screen_entry(RNASTRAND, entry(tmp_path, ok))
    assert why is None and seq == "ACGUACGUACGU" * 2
    seq, why = screen_entry(RNASTRAND, entry(tmp_path, "ACGU" * 4 + "ACG", "RFA_00002"))  # 19 nt
    assert seq is None and why.reason == "too_short" and why.detail == "19 nt"
    seq, why = screen_entry(RNASTRAND, entry(tmp_path, "ACGU" * 5 + "N" + "P", "RFA_00003"))
    assert seq is None and why.reason == "non_acgu" and "'N'" in why.detail and "'P'" in why.detail
    bad = bpseq("RFA_00004", "ACGU" * 6).replace("1 A 0", "1 A 99")
    seq, why = screen_entry(RNASTRAND, entry(tmp_path, "", "RFA_00004", text=bad))
    assert why.reason == "malformed" and "line 4" in why.detail


def rand_seq(n: int, seed: int) -> str:
    rng = random.Random(seed)
    return "".join(rng.choice("ACGU") for _ in range(n))


def test_prepare_small_directory(tmp_path):
    long_seq = rand_seq(900, 1)
    pk = {1: 30, 2: 29, 15: 45, 16: 44}  # (1,30) and (15,45) cross
    files = {
        "RFA_00001": bpseq("RFA_00001", long_seq),
        "RFA_00002": bpseq("RFA_00002", long_seq.lower()),  # duplicate of 00001 -> redundant
        "RFA_00003": bpseq("RFA_00003", rand_seq(60, 2), pk),
        "RFA_00004": bpseq("RFA_00004", "ACGUN" * 10),
        "RFA_00005": bpseq("RFA_00005", "ACGU" * 3),
        "RFA_00006": bpseq("RFA_00006", rand_seq(300, 3)).replace("3 ", "7 ", 1),
    }
    for k, v in files.items():
        (tmp_path / f"{k}.bpseq").write_text(v)
    seen = []
    prep = prepare_rnastrand(tmp_path, progress=lambda d, t: seen.append((d, t)))
    assert [k.entry_id for k in prep.kept] == ["RFA_00001", "RFA_00003"]
    assert prep.kept[0].subsets == ("all", "long") and prep.kept[0].redundant_members == ("RFA_00002",)
    assert prep.kept[1].subsets == ("all", "short", "pk", "pk-short")
    assert prep.redundant_of == {"RFA_00002": "RFA_00001"}
    assert {e.entry_id: e.reason for e in prep.excluded} == {
        "RFA_00002": "redundant", "RFA_00004": "non_acgu", "RFA_00005": "too_short", "RFA_00006": "malformed"}
    assert prep.steps == (
        ("read", 6), ("parsed", 5), ("length>=20", 4), ("ACGU only", 3), ("one molecule", 3),
        ("non-redundant", 2))
    assert prep.subset_counts == {"all": 2, "long": 1, "short": 1, "pk": 1, "pk-short": 1}
    assert seen[0] == (1, 6) and seen[-1] == (6, 6)


@pytest.mark.slow
def test_full_archive(rnastrand_archive):
    # Independent counts straight from the tarball: length < 20 and non-ACGU after upper-casing and T->U.
    short = non_acgu = multi = total = 0
    with tarfile.open(rnastrand_archive, "r:gz") as tf:
        for m in tf:
            if not m.isfile() or "/." in m.name:
                continue
            total += 1
            text = tf.extractfile(m).read().decode()
            seq = "".join(ln.split()[1] for ln in text.splitlines() if ln.strip() and not ln.startswith("#"))
            molecules = re.search(r"number of molecules: (\d+)", text)
            if len(seq) < 20:
                short += 1
            elif set(seq.upper().replace("T", "U")) - set("ACGU"):
                non_acgu += 1
            elif molecules and int(molecules.group(1)) > 1:
                multi += 1
    t0 = time.monotonic()
    prep = prepare_rnastrand(rnastrand_archive)
    elapsed = time.monotonic() - t0
    counts = prep.exclusion_counts()
    assert total == 4666
    assert prep.steps[0] == ("read", 4666)
    assert counts.get("malformed", 0) == 0
    assert counts["too_short"] == short and counts["non_acgu"] == non_acgu
    assert counts["multi_molecule"] == multi and multi > 100
    assert len(prep.kept) + counts["redundant"] == total - short - non_acgu - multi
    # No two kept entries have the same sequence; every redundant entry points at a kept one.
    kept_ids = {k.entry_id for k in prep.kept}
    assert len({k.sequence for k in prep.kept}) == len(prep.kept)
    assert set(prep.redundant_of.values()) <= kept_ids
    assert prep.subset_counts["all"] == len(prep.kept)
    bins = ("short", "medium", "long")
    assert sum(prep.subset_counts[b] for b in bins) == len(prep.kept)
    assert elapsed < 60
