"""Assign the Rfam family of a sequence with cmscan, using the configured library (setting RFAM_LIBRARY)."""

from __future__ import annotations

import json

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from ingest.rfam.cmscan import assign_family
from ingest.rfam.library import RfamLibrary, RfamLibraryError, resolve_library


def configured_library() -> RfamLibrary:
    """The library at ``settings.RFAM_LIBRARY``, else ``$COMPARNA_RFAM_LIBRARY``, else ``<repo>/var/rfam``.

    The default library is built from Debian's infernal-doc testsuite on first use.
    """
    return resolve_library(getattr(settings, "RFAM_LIBRARY", None) or None)


class Command(BaseCommand):
    help = "Print the Rfam family of SEQ (cmscan; best E-value among hits covering >= 80 % of it) or none."

    def add_arguments(self, parser):
        parser.add_argument("--sequence", required=True, help="RNA sequence (ACGU; T is read as U)")
        parser.add_argument("--json", action="store_true", help="print JSON")

    def handle(self, *args, **opts):
        sequence = "".join(opts["sequence"].split())
        if not sequence or not sequence.isalpha():
            raise CommandError("--sequence must be a non-empty string of nucleotide letters")
        try:
            library = configured_library()
            found = assign_family(sequence, library)
        except (RfamLibraryError, ValueError) as exc:
            raise CommandError(str(exc)) from exc
        family = None
        if found is not None:
            family = {
                "accession": found.accession,
                "id": found.family_id,
                "evalue": found.evalue,
                "coverage": found.coverage,
            }
        if opts["json"]:
            self.stdout.write(json.dumps({"family": family, "rfam_version": library.version}))
        elif family is None:
            self.stdout.write(f"no family (Rfam library: {library.version})")
        else:
            self.stdout.write(
                f"{family['accession']} {family['id']}  E-value {family['evalue']:.3g}  "
                f"coverage {family['coverage']:.1%}  (Rfam library: {library.version})"
            )
