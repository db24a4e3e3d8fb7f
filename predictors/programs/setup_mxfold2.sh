#!/bin/sh
# Install MXfold2 into its virtualenv (it pins torch<2 on paper but runs with torch 2.13.0 here).
# Usage: sh predictors/programs/setup_mxfold2.sh VENV_DIR          (the venv exists and holds torch)
#        sh predictors/programs/setup_mxfold2.sh --check VENV_DIR  (exit 0 when the venv can predict)
# Needs python3-dev and g++; compiling the C++ extension takes about a minute. Called by
# scripts/install_predictors.sh, which makes the venv (Debian's python3 + torch; predictors/core/venvs.py).
set -eu
if [ "${1:-}" = "--check" ]; then
  # A real prediction (a 12-nt hairpin), not just an import: the compiled extension must load and fold.
  printf '>check\nGGGGAAAACCCC\n' > "$2/.check.fa"
  "$2/bin/python" -m mxfold2 predict "$2/.check.fa" | grep -q '^[.()]\{12\} '
  rm -f "$2/.check.fa"
  exit 0
fi
VENV=$1
"$VENV/bin/pip" install -q numpy==1.26.4 tqdm==4.70.1 pybind11==3.1.0
# The wheel carries its trained weights and C++ sources but no extension for Python 3.11.
"$VENV/bin/pip" install -q --no-deps mxfold2==0.1.1
PKG=$("$VENV/bin/python" -c "import importlib.util as u; print(u.find_spec('mxfold2').submodule_search_locations[0])")
PB=$("$VENV/bin/python" -c "import pybind11; print(pybind11.get_include())")
INC=$("$VENV/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['include'])")
EXT=$("$VENV/bin/python" -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))")
cd "$PKG/src"
g++ -O3 -std=c++17 -shared -fPIC -I"$PB" -I"$INC" -I. interface.cpp param/turner.cpp param/positional.cpp \
    param/bpscore.cpp param/mix.cpp fold/fold.cpp fold/zuker.cpp fold/nussinov.cpp -o "../interface$EXT"
