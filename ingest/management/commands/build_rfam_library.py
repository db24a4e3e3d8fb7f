"""Build the Rfam library (pressed CMs + seeds) from single-model files, or index a full release."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from ingest.rfam.library import TESTSUITE_DIR, RfamLibraryError, build_library, index_release


class Command(BaseCommand):
    help = (
        "build_rfam_library SOURCE DEST: assemble the calibrated single-model *.c.cm files and *.sto seeds "
        f"of SOURCE (e.g. {TESTSUITE_DIR}) into a pressed library in DEST. "
        "build_rfam_library --release VERSION DIR: press and index a downloaded Rfam release "
        "(DIR/Rfam.cm, DIR/Rfam.seed)."
    )

    def add_arguments(self, parser):
        parser.add_argument("source", help="directory with *.c.cm and *.sto (or the release directory)")
        parser.add_argument("dest", nargs="?", help="library directory to create (replaced if present)")
        parser.add_argument(
            "--release", metavar="VERSION", help='index a full Rfam release, e.g. "Rfam 14.10"'
        )

    def handle(self, *args, **opts):
        try:
            if opts["release"]:
                if opts["dest"]:
                    raise CommandError("--release indexes SOURCE in place; do not give DEST")
                library = index_release(opts["source"], opts["release"])
            else:
                if not opts["dest"]:
                    raise CommandError("DEST is required")
                library = build_library(opts["source"], opts["dest"])
        except RfamLibraryError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"{library.root}: {library.version}, {len(library.families)} families")
        for fam in library.families.values():
            seed = f"{fam.nseq} seed sequences" if fam.has_seed else "no seed"
            self.stdout.write(f"  {fam.accession:<18} {fam.id:<16} CLEN {fam.clen:<5} {seed}")
