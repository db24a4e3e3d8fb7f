"""CLI around eFold (``efold`` 0.1.2, Rouskin lab): deep-learning secondary structure with pseudoknots.

de Lajarte et al., Sci Adv (2026), doi:10.1126/sciadv.adz4967. Runs in its own virtualenv (torch CPU,
``predictors/programs/setup_efold.sh``) with the weights shipped in the wheel; its public API
(``efold.inference``) predicts a list of base pairs, pseudoknots included. Loading the package builds the
model and prints progress messages; those go to stderr so that stdout carries only our output. The
package imports its training and logging dependencies at load time (they are installed, never called).

``efold.inference`` runs the model with autograd on: every call builds a gradient graph it never uses, which
costs about 2.5x the memory (a 300-nt sequence peaks at 1.9 GB instead of 0.75 GB, 1000 nt at more than
15 GB instead of 1.8 GB) and, in one process, memory that grows by about 1.4 GB per 300-nt target. We call
it under ``torch.no_grad()``: the same forward pass and post-processing (the pairs are the same,
``tests/unit/test_venv_method_outputs.py``), without the graph, so a batch can fold many targets in one
process.
"""

from __future__ import annotations

import contextlib
import sys
from types import ModuleType

from predictors.programs._common import base_parser, package_version, print_pairs_json, read_query

_efold: ModuleType | None = None


def _load() -> ModuleType:
    """Import eFold (which loads the model) once per process, its chatter sent to stderr."""
    global _efold
    if _efold is None:
        import torch

        torch.set_num_threads(1)  # workers run jobs side by side
        with contextlib.redirect_stdout(sys.stderr):
            import efold

        _efold = efold
    return _efold


def predict(sequence: str) -> dict:
    """``{"pairs": [(i, j), ...]}`` (1-based) predicted by eFold for one sequence."""
    import torch

    efold = _load()
    with contextlib.redirect_stdout(sys.stderr), torch.no_grad():
        result = efold.inference(sequence, fmt="bp")
    return {"pairs": sorted((int(i), int(j)) for i, j in result[sequence])}


def main(argv: list[str] | None = None) -> None:
    parser = base_parser(__doc__.splitlines()[0], "efold")
    args = parser.parse_args(argv)
    _name, seq = read_query(args.fasta)
    result = predict(seq)
    print_pairs_json(program="eFold", version=package_version("efold"), sequence=seq, pairs=result["pairs"])


if __name__ == "__main__":
    main()
