"""CLI around MXfold2 (``mxfold2`` 0.1.1): deep-learning folding scores integrated with Turner energies.

Sato, Akiyama & Sakakibara, Nat Commun 12:941 (2021). Runs in MXfold2's own virtualenv
(``predictors/programs/setup_mxfold2.sh``). It does what ``mxfold2 predict`` does with its default
model (the ``TrainSetAB`` configuration and weights shipped in the wheel): the model is built by the
package's own ``Predict.build_model`` from the package's own argument parser and configuration file,
loaded once per process, and each sequence is folded in evaluation mode without gradients, as the CLI
does. Loading once is what lets a batch (``predictors.core.batch``) fold many targets in one launch;
``tests/unit/test_venv_method_outputs.py`` checks the structures equal the CLI's. One torch thread: workers
run jobs side by side.
"""

from __future__ import annotations

import os
from argparse import ArgumentParser
from typing import Any

from predictors.programs._common import base_parser, print_dot_bracket, read_query

_model: Any = None


def _load() -> Any:
    """The CLI's default model (``TrainSetAB``), built and loaded once per process."""
    global _model
    if _model is None:
        import mxfold2
        import torch
        from mxfold2.predict import Predict

        torch.set_num_threads(1)
        torch.manual_seed(0)  # what ``mxfold2 predict`` does (its --seed defaults to 0)
        models = os.path.join(os.path.dirname(mxfold2.__file__), "models")
        parser = ArgumentParser(fromfile_prefix_chars="@")
        Predict.add_args(parser.add_subparsers())
        args = parser.parse_args(["predict", "-", "@" + os.path.join(models, "TrainSetAB.conf")])
        model, _config = Predict().build_model(args)
        state = torch.load(os.path.join(models, args.param), map_location="cpu")
        if isinstance(state, dict) and "model_state_dict" in state:
            state = state["model_state_dict"]
        model.load_state_dict(state)
        model.eval()
        _model = model
    return _model


def predict(sequence: str) -> dict:
    """``{"structure": dot-bracket, "score": float}`` predicted by MXfold2 for one sequence."""
    import torch

    model = _load()
    with torch.no_grad():
        scores, structures, _pairs = model([sequence])
    return {"structure": structures[0], "score": float(scores[0])}


def main(argv: list[str] | None = None) -> None:
    parser = base_parser(__doc__.splitlines()[0], "mxfold2")
    args = parser.parse_args(argv)
    name, seq = read_query(args.fasta)
    result = predict(seq)
    print_dot_bracket(name, seq, result["structure"], result["score"])


if __name__ == "__main__":
    main()
