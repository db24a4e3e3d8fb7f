"""``python manage.py annotate PATH [--json]``: chains and base pairs of one PDB/mmCIF file.

Prints, for every nucleic-acid chain of the first model, the chain id, the renumbered sequence, the
standard and extended base pairs (1-based, Leontis-Westhof class), the pairs with other chains (both chains
named), the residues whose bases lack ring atoms, the map to author numbering and the exclusion reason, as
computed by :mod:`ingest.pdb.extract` and :mod:`ingest.pdb.annotate`.
"""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from comparna.rna.formats import write_dot_bracket
from comparna.rna.structure import Structure
from ingest.pdb.annotate import SINGLE_CHAIN_RULE, AnnotatedChain, annotate_file
from ingest.pdb.extract import StructureFileError


def _pairs_text(pairs: tuple[tuple[int, int, str], ...]) -> str:
    return " ".join(f"{i}-{j}:{lw}" for i, j, lw in pairs) or "-"


def _dot_bracket(chain: AnnotatedChain) -> str | None:
    structure = Structure.from_pairs(chain.length, [(i, j) for i, j, _ in chain.standard_pairs])
    try:
        return write_dot_bracket(structure)
    except ValueError:  # multiplets cannot be written as dot-bracket
        return None


class Command(BaseCommand):
    help = "Extract the RNA chains of a PDB/mmCIF file (plain or gzipped) and annotate their base pairs."

    def add_arguments(self, parser):
        parser.add_argument("path", help="mmCIF or PDB file, optionally gzipped")
        parser.add_argument("--json", action="store_true", help="print JSON instead of text")

    def handle(self, *args, **options):
        path = options["path"]
        try:
            entry = annotate_file(path)
        except StructureFileError as exc:
            raise CommandError(str(exc)) from exc
        if options["json"]:
            self.stdout.write(json.dumps(entry.to_json()))
            return
        if not entry.chains:
            self.stdout.write(f"{path}: no nucleic-acid chains")
            return
        self.stdout.write(f"rule: {SINGLE_CHAIN_RULE}")
        self.stdout.write(f"{path}: {entry.model_count} model(s), {len(entry.chains)} nucleic-acid chain(s)")
        for chain in entry.chains:
            status = f"EXCLUDED: {chain.excluded}" if chain.excluded else "target"
            self.stdout.write("")
            self.stdout.write(f"chain {chain.chain}  {chain.length} nt  {status}")
            self.stdout.write(f"  sequence        {chain.sequence}")
            dot_bracket = _dot_bracket(chain)
            if dot_bracket is not None:
                self.stdout.write(f"  standard (dbn)  {dot_bracket}")
            for label, pairs in (("standard", chain.standard_pairs), ("extended", chain.extended_pairs)):
                self.stdout.write(f"  {label} pairs  ({len(pairs)}) {_pairs_text(pairs)}")
            if chain.inter_chain_details:
                inter = " ".join(
                    f"{p.i}-{p.partner_chain}.{p.partner_i}({p.partner_author}):{p.lw}"
                    for p in chain.inter_chain_details
                )
                self.stdout.write(f"  with other chains ({len(chain.inter_chain_details)}) {inter}")
            if chain.incomplete_bases:
                missing = " ".join(
                    f"{i}({comp} {author}: no {','.join(atoms)})"
                    for i, author, comp, _, atoms, _ in chain.incomplete_bases
                )
                count = len(chain.incomplete_bases)
                self.stdout.write(f"  bases lacking ring atoms, not annotated ({count}) {missing}")
            numbers = " ".join(f"{k}={a}" for k, a in enumerate(chain.author_numbers, start=1))
            self.stdout.write(f"  author numbers  {numbers}")
