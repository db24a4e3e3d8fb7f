"""Family assignment with the real cmscan on real tRNAs (Rfam seed, RNA STRAND / Sprinzl) and negatives."""

from __future__ import annotations

import json
import random
import tarfile

import pytest

from comparna.rna.formats import read_bpseq
from ingest.rfam.cmscan import CmscanHit, assign_family, choose_hit, parse_tblout, scan_sequences
from ingest.rfam.library import TESTSUITE_DIR, build_library

pytestmark = pytest.mark.skipif(not TESTSUITE_DIR.is_dir(), reason="infernal-doc is not installed")


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    return build_library(TESTSUITE_DIR, tmp_path_factory.mktemp("rfam") / "lib")


def sprinzl_trnas(archive, limit=None) -> dict[str, str]:
    """ACGU-only SPR_* (Sprinzl tRNA database) entries of RNA STRAND, as the benchmark filter keeps them."""
    out: dict[str, str] = {}
    with tarfile.open(archive) as tar:
        for member in tar.getmembers():
            name = member.name.rsplit("/", 1)[-1]
            if not (member.isfile() and name.startswith("SPR_") and name.endswith(".bpseq")):
                continue
            text = tar.extractfile(member).read().decode("latin-1")
            seq = "".join(
                f[1] for f in (ln.split() for ln in text.splitlines() if ln and not ln.startswith("#"))
            )
            seq = seq.upper().replace("T", "U")
            if set(seq) <= set("ACGU"):
                assert read_bpseq(text)[0].upper().replace("T", "U") == seq  # same reading as the ingest
                out[name[:-6]] = seq
    return dict(sorted(out.items())[:limit]) if limit else out


def hit(name, start, end, evalue, score=30.0, strand="+"):
    return CmscanHit(name, name, "q", 1, 70, start, end, strand, "no", score, evalue, evalue < 0.01)


def test_choose_hit_rule():
    hits = [
        hit("short", 1, 70, 1e-30),  # covers 70/100: below 80 %
        hit("weak", 1, 100, 0.5),  # covers all but not significant
        hit("good", 5, 90, 1e-8),
        hit("best", 1, 100, 1e-12),
        hit("minus", 100, 1, 1e-40, strand="-"),
    ]
    assert choose_hit(hits, 100).target_name == "best"
    assert choose_hit(hits[:3], 100).target_name == "good"  # 86 % coverage, lowest E among eligible
    assert choose_hit(hits[:2], 100) is None
    assert choose_hit(hits[:2], 100, max_evalue=1.0).target_name == "weak"
    assert hits[2].coverage(100) == pytest.approx(0.86)


def test_parse_tblout_real_output(tmp_path, library):
    import subprocess

    fasta = TESTSUITE_DIR / "emitted-tRNA.fa"
    table = tmp_path / "t.tbl"
    subprocess.run(
        ["cmscan", "--cpu", "1", "--toponly", "--noali", "--tblout", str(table), "-o", "/dev/null",
         str(library.cm_path), str(fasta)],
        check=True,
    )  # fmt: skip
    hits = parse_tblout(table.read_text())
    queries = {h.query_name for h in hits}
    assert queries == {"tRNA-1", "tRNA-2", "tRNA-3"}
    best = {q: min((h for h in hits if h.query_name == q), key=lambda h: h.evalue) for q in queries}
    assert {h.target_accession for h in best.values()} == {"RF00005"}
    assert all(h.included and h.evalue < 1e-5 for h in best.values())


def test_known_trnas_are_rf00005_and_shuffled_is_none(library, rnastrand_archive, mmcif_dir):
    seed = library.read_seed("RF00005")
    # Classic-length members (73-76 nt): the old RF00005 seed also holds selenocysteine tRNAs (~90 nt,
    # rightly assigned to tRNA-Sec RF01852) and reduced mitochondrial tRNAs that fall below E = 0.01.
    classic = [n for n in seed.names if 73 <= len(seed.ungapped(n)) <= 76]
    queries = {f"seed:{n}": seed.ungapped(n) for n in random.Random(5).sample(classic, 3)}
    # yeast tRNA-Phe, from the reference dot-bracket of PDB 1EHZ
    queries["1EHZ"] = (mmcif_dir / "1EHZ.dbn").read_text().splitlines()[1].upper()
    queries.update({f"strand:{k}": v for k, v in sprinzl_trnas(rnastrand_archive, limit=3).items()})
    trna = queries["strand:SPR_00590"]
    shuffled = list(trna)
    random.Random(1).shuffle(shuffled)
    queries["shuffled"] = "".join(shuffled)
    queries["random200"] = "".join(random.Random(2).choice("ACGU") for _ in range(200))
    result = scan_sequences(queries, library)
    for key, seq in queries.items():
        found = result[key]
        if key in ("shuffled", "random200"):
            assert found is None, key
            continue
        assert found is not None, key
        assert (found.accession, found.family_id) == ("RF00005", "tRNA"), key
        assert found.coverage >= 0.8 and found.evalue <= 0.01
        # coverage is what the hit coordinates say
        assert found.coverage == pytest.approx((found.seq_to - found.seq_from + 1) / len(seq), abs=1e-6)
        assert found.rfam_version == library.version
    # one-sequence entry point agrees with the batch
    single = assign_family(trna, library)
    assert single == result["strand:SPR_00590"]


@pytest.mark.slow
def test_all_acgu_sprinzl_trnas_are_rf00005(library, rnastrand_archive):
    trnas = sprinzl_trnas(rnastrand_archive)
    assert len(trnas) >= 20
    result = scan_sequences(trnas, library)
    assert {k: a and a.accession for k, a in result.items()} == {k: "RF00005" for k in trnas}


def test_assign_family_command(library, settings, capsys):
    from django.core.management import call_command

    settings.RFAM_LIBRARY = str(library.root)
    seq = library.read_seed("RF00006").ungapped(library.read_seed("RF00006").names[0])
    call_command("assign_family", sequence=seq, json=True)
    out = json.loads(capsys.readouterr().out)
    assert out["rfam_version"] == library.version
    assert out["family"]["accession"] == "RF00006" and out["family"]["id"] == "Vault"
    assert out["family"]["evalue"] <= 0.01 and out["family"]["coverage"] >= 0.8
    call_command("assign_family", sequence="ACGU" * 10, json=True)
    assert json.loads(capsys.readouterr().out) == {"family": None, "rfam_version": library.version}
