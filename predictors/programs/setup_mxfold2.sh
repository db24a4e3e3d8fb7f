#!/bin/sh
# Build MXfold2's own virtualenv (it pins torch<2 on paper but runs with torch 2.13.0 here).
# Usage: sh predictors/programs/setup_mxfold2.sh [VENV_DIR] [TORCH_WHEEL]
# Needs python3.11, python3-dev and g++; compiling the C++ extension takes about a minute.
set -eu
VENV=${1:-var/venvs/mxfold2}
TORCH=${2:-/opt/wheels/torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl}
PYTHON=${PYTHON:-/usr/bin/python3}  # Debian's Python: the sandbox binds /usr, not a pyenv in /root
"$PYTHON" -m venv "$VENV"
"$VENV/bin/pip" install -q "$TORCH"
"$VENV/bin/pip" install -q "numpy<2" tqdm pybind11
# The wheel carries its trained weights and C++ sources but no extension for Python 3.11.
"$VENV/bin/pip" install -q --no-deps mxfold2==0.1.1
PKG=$("$VENV/bin/python" -c "import importlib.util as u; print(u.find_spec('mxfold2').submodule_search_locations[0])")
PB=$("$VENV/bin/python" -c "import pybind11; print(pybind11.get_include())")
INC=$("$VENV/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['include'])")
EXT=$("$VENV/bin/python" -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))")
cd "$PKG/src"
g++ -O3 -std=c++17 -shared -fPIC -I"$PB" -I"$INC" -I. interface.cpp param/turner.cpp param/positional.cpp \
    param/bpscore.cpp param/mix.cpp fold/fold.cpp fold/zuker.cpp fold/nussinov.cpp -o "../interface$EXT"
