"""Compare one predicted structure with a reference: counts, sensitivity, PPV, MCC, F1 and WL score."""

from __future__ import annotations

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from comparna.rna.formats import read_structure
from comparna.rna.metrics import SlippedCounts, convention, count_pairs
from comparna.rna.structure import Structure, StructureFormatError
from comparna.rna.wl import wl_score

_FILE_FORMATS = {".bpseq": "bpseq", ".ct": "ct", ".json": "json"}
COUNT_KEYS = ("tp", "fn", "fp", "fp_inconsistent", "fp_contradicting", "fp_compatible", "tn")
SCORE_KEYS = ("sensitivity", "ppv", "mcc", "f1", "wl")


def _same_sequence(a: str, b: str) -> bool:
    return a.upper().replace("T", "U") == b.upper().replace("T", "U")


def load_structure(arg: str, role: str, sequence: str | None) -> tuple[str | None, Structure]:
    """Read ``arg`` as a .bpseq/.ct/.json file or, otherwise, as a dot-bracket string."""
    suffix = Path(arg).suffix.lower()
    fmt = _FILE_FORMATS.get(suffix)
    length = len(sequence) if sequence is not None else None
    try:
        if fmt is None:
            if Path(arg).is_file():
                raise CommandError(
                    f"{role} {arg!r}: unknown file extension {suffix!r}; use .bpseq, .ct, .json "
                    "or give a dot-bracket string"
                )
            return read_structure(arg, "dot-bracket", length=length)
        path = Path(arg)
        if not path.is_file():
            raise CommandError(f"{role} file {arg!r} does not exist")
        if fmt == "json" and length is None:
            raise CommandError(f"{role} {arg!r}: a JSON pair list needs --sequence")
        return read_structure(path.read_text(), fmt, length=length)
    except StructureFormatError as e:
        raise CommandError(f"{role} {arg!r}: {e}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise CommandError(f"{role} {arg!r}: cannot read: {e}") from None


class Command(BaseCommand):
    help = (
        "Score a predicted secondary structure against a reference (SCIENCE.md §2). REF and PRED are "
        "dot-bracket strings or paths to .bpseq, .ct or .json ({'pairs': [[i, j], ...]}) files."
    )

    def add_arguments(self, parser):
        parser.add_argument("--sequence", help="RNA sequence (optional when REF or PRED is BPSEQ/CT)")
        parser.add_argument("--reference", required=True, help="reference structure (dot-bracket or file)")
        parser.add_argument("--prediction", required=True, help="predicted structure (dot-bracket or file)")
        parser.add_argument(
            "--slip",
            action="store_true",
            help="slippage mode (Mathews et al. 1999): sensitivity from reference pairs with a slipped match "
            "(tp), PPV from predicted pairs with one (tp_predicted)",
        )
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args, **options):
        sequence = options["sequence"]
        if sequence is not None:
            sequence = sequence.strip()
            bad = [k for k, c in enumerate(sequence, start=1) if not c.isalpha()]
            if not sequence or bad:
                where = f" (position {bad[0]})" if bad else ""
                raise CommandError(f"--sequence must be a non-empty string of letters{where}")
        # Files carrying a sequence are read first so that a dot-bracket argument can use their length.
        ordered = sorted(
            (("reference", options["reference"]), ("prediction", options["prediction"])),
            key=lambda ra: Path(ra[1]).suffix.lower() not in (".bpseq", ".ct"),
        )
        structures: dict[str, Structure] = {}
        for role, arg in ordered:
            file_seq, structure = load_structure(arg, role, sequence)
            if file_seq is not None:
                if sequence is None:
                    sequence = file_seq
                elif not _same_sequence(file_seq, sequence):
                    raise CommandError(f"the sequence in the {role} file {arg!r} differs from the sequence")
            structures[role] = structure
        if sequence is None:
            raise CommandError("--sequence is required when neither structure is a BPSEQ or CT file")
        for role, structure in structures.items():
            if structure.length != len(sequence):
                raise CommandError(
                    f"{role} has length {structure.length}, the sequence has length {len(sequence)}"
                )
        ref, pred = structures["reference"], structures["prediction"]
        counts = count_pairs(ref, pred, slip=options["slip"])
        result: dict[str, object] = counts.as_dict()
        if isinstance(counts, SlippedCounts):
            # both sides' true positives: tp (reference pairs matched, for sensitivity) and tp_predicted
            # (predicted pairs matched, for PPV); they differ when one pair matches two of the other side
            result["tp_predicted"] = counts.tp_predicted
        result.update(
            sensitivity=counts.sensitivity,
            ppv=counts.ppv,
            mcc=counts.mcc,
            f1=counts.f1,
            wl=wl_score(ref, pred),
            slip=options["slip"],
            length=len(sequence),
            convention=convention(slip=options["slip"]),
        )
        if options["json"]:
            self.stdout.write(json.dumps(result))
            return
        width = max(len(k) for k in COUNT_KEYS + SCORE_KEYS)
        keys = COUNT_KEYS + (("tp_predicted",) if "tp_predicted" in result else ())
        width = max(width, *(len(k) for k in keys))
        lines = [f"{k:<{width}}  {result[k]:>10}" for k in keys]
        lines += [f"{k:<{width}}  {result[k]:>10.4f}" for k in SCORE_KEYS]
        lines.append(f"{'slip':<{width}}  {'yes' if options['slip'] else 'no':>10}")
        lines.append(f"convention: {result['convention']}")
        self.stdout.write("\n".join(lines))
