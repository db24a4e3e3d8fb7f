"""Shared input/output helpers of the wrappers (standard library only, plus comparna.rna)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from importlib.metadata import version as dist_version

from comparna.rna.formats import read_fasta

#: Pair probabilities below this are not printed (sparse storage for precision-recall curves).
DEFAULT_CUTOFF = 1e-3


def package_version(dist: str) -> str:
    """Installed version of a distribution, e.g. ``package_version("ViennaRNA") == "2.7.2"``."""
    return dist_version(dist)


def base_parser(description: str, dist: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("fasta", help="FASTA file; the first sequence is folded")
    parser.add_argument("--version", action="version", version=f"%(prog)s {dist} {package_version(dist)}")
    return parser


def read_query(path: str) -> tuple[str, str]:
    """(name, sequence) of the first FASTA record, upper case with T -> U (what the folding codes expect)."""
    with open(path) as f:
        records = read_fasta(f.read())
    if not records:
        sys.exit(f"{path}: no FASTA record")
    name, seq = records[0]
    return name, seq.upper().replace("T", "U")


def print_dot_bracket(name: str, sequence: str, structure: str, energy: float | None = None) -> None:
    """ViennaRNA-style output: header, sequence, structure and energy in parentheses."""
    suffix = f" ({energy:6.2f})" if energy is not None else ""
    print(f">{name}\n{sequence}\n{structure}{suffix}")


def print_pairs_json(
    *,
    program: str,
    version: str,
    sequence: str,
    pairs: Iterable[tuple[int, int]],
    probabilities: Iterable[tuple[int, int, float]] | None = None,
    extra: dict | None = None,
) -> None:
    """Print ``{"pairs": [[i, j], ...], "probabilities": [[i, j, p], ...], ...}`` (1-based)."""
    out: dict = {"program": program, "version": version, "length": len(sequence)}
    out["pairs"] = sorted([int(i), int(j)] for i, j in pairs)
    if probabilities is not None:
        out["probabilities"] = sorted([int(i), int(j), float(f"{p:.6g}")] for i, j, p in probabilities)
    out.update(extra or {})
    json.dump(out, sys.stdout, separators=(",", ":"))
    sys.stdout.write("\n")
