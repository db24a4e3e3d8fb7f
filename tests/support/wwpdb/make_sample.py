"""Write the sample pre-release files of this folder from real entries (see README.md for provenance).

Run from the repository root: ``.venv/bin/python tests/support/wwpdb/make_sample.py``. The output is
deterministic; the committed files are what it writes.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import gemmi

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))

from tests.support.fixture_data import extract_mmcif  # noqa: E402

#: Set by main(): the mmCIF fixtures (tests/data/mmcif.tar.gz) unpacked into a temporary folder.
MMCIF = Path()

#: 1FCZ entity 1, the protein line the D3R CELPP pipeline appends to every week's sequence file
#: (drugdata/D3R, d3r/celpp/dataimport.py, SEQUENCE_TSV_STANDARD).
D3R_1FCZ = (
    "SPQLEELITKVSKAHQETFPSLCQLGKYTTNSSADHRVQLDLGLWDKFSELATKCIIKIVEFAKRLPGFTGLSIADQITLLKAACLDILMLRICTRYTPEQDT"
    "MTFSDGLTLNRTQMHNAGFGPLTDLVFAFAGQLLPLEMDDTETGLLSAICLICGDRMDLEEPEKVDKLQEPLLEALRLYARRRRPSQPYMFPRMLMKITDLRG"
    "ISTKGAERAITLKMEIPGPMPPLIREMLE"
)


def from_entity_poly(name: str, pdb_id: str) -> list[tuple[str, str, str, str]]:
    block = gemmi.cif.read(str(MMCIF / name)).sole_block()
    rows = []
    columns = ["entity_id", "pdbx_seq_one_letter_code", "pdbx_seq_one_letter_code_can"]
    for row in block.find("_entity_poly.", columns):
        plain = "".join(gemmi.cif.as_string(row[1]).split())
        can = "".join(gemmi.cif.as_string(row[2]).split())
        rows.append((pdb_id, gemmi.cif.as_string(row[0]), plain, can))
    return rows


def from_observed(name: str, pdb_id: str, entity: str, chain: str) -> tuple[str, str, str, str]:
    """For files without ``_entity_poly``: the observed residues of ``chain`` in the same notation."""
    structure = gemmi.read_structure(str(MMCIF / name))
    structure.setup_entities()
    residues = structure[0][chain].get_polymer()
    plain, can = [], []
    for residue in residues:
        name3 = residue.name.strip()
        info = gemmi.find_tabulated_residue(name3)
        parent = (info.one_letter_code.upper() if info else "N") or "N"
        plain.append(name3 if len(name3) == 1 and name3 in "ACGU" else f"({name3})")
        can.append(parent if parent != " " else "N")
    return (pdb_id, entity, "".join(plain), "".join(can))


def main() -> None:
    global MMCIF
    with tempfile.TemporaryDirectory() as tmp:
        MMCIF = extract_mmcif(Path(tmp))
        write_samples()


def write_samples() -> None:
    rows = [
        *from_entity_poly("1ehz-assembly-1.cif", "1EHZ"),
        ("1FCZ", "1", D3R_1FCZ, D3R_1FCZ),
        from_observed("1A1T_1_B.cif", "1A1T", "1", "B"),
        *from_entity_poly("1gid.cif.gz", "1GID"),
        from_observed("2HY9.cif", "2HY9", "1", "1"),
        *from_entity_poly("4qln.cif", "4QLN"),
        from_observed("6RS3.cif", "6RS3", "1", "A"),
        from_observed("8btk_B7.cif", "8BTK", "2", "B7"),
    ]
    with open(HERE / "new_release_structure_sequence.tsv", "w", newline="\n") as out:
        out.write("PDB_ID\tEntity_ID\tSequence\n")
        for pdb_id, entity, plain, _ in rows:
            out.write(f"{pdb_id}\t{entity}\t{plain}\n")
    with open(HERE / "new_release_structure_sequence_canonical.tsv", "w", newline="\n") as out:
        for pdb_id, entity, _, can in rows:
            out.write(f"{pdb_id}\t{entity}\t{can}\n")


if __name__ == "__main__":
    main()
