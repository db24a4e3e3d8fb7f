#!/bin/sh
# Install eFold 0.1.2 and its pinned dependency closure (efold-requirements.txt) into its virtualenv,
# without letting pip resolve anything else (no CUDA torch).
# Usage: sh predictors/programs/setup_efold.sh VENV_DIR           (the venv exists and holds torch)
#        sh predictors/programs/setup_efold.sh --check VENV_DIR   (exit 0 when the venv predicts a hairpin)
# Called by scripts/install_predictors.sh, which makes the venv (Debian's python3 + torch).
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
if [ "${1:-}" = "--check" ]; then
  # A real prediction through our wrapper, as the sandbox runs it (PYTHONPATH = the wrapper packages).
  printf '>check\nGGGGGAAAACCCCC\n' > "$2/.check.fa"
  PYTHONPATH="$REPO" OMP_NUM_THREADS=1 "$2/bin/python" -m predictors.programs.efold_fold "$2/.check.fa" \
    | grep -q '"pairs":\[\[1,14\]'
  rm -f "$2/.check.fa"
  exit 0
fi
VENV=$1
"$VENV/bin/pip" install -q --no-deps -r "$HERE/efold-requirements.txt"
