#!/usr/bin/env bash
# Installs what the predictor runners need, on Debian 12, doing only what is missing (safe to re-run):
#   1. Debian packages for the container runner (podman runc debootstrap uidmap slirp4netns fuse-overlayfs)
#      and for compiling MXfold2's extension (python3-venv python3-dev g++);
#   2. the Podman image the container runner and its tests use, built without a registry
#      (debootstrap --variant=minbase + podman import; the suite is the host's, so that the mounted
#      virtualenv's compiled modules load inside it);
#   3. MXfold2's own virtualenv (predictors/programs/setup_mxfold2.sh) on Debian's /usr/bin/python3.
# Run as root, or as the user that runs the workers with sudo available (the image lands in that user's
# Podman storage). A step that cannot work here is skipped with a message, never a failure of the script.
#
# Overrides (for a test build that leaves the real ones alone):
#   COMPARNA_PREDICTOR_IMAGE  image tag      (default localhost/comparna-bookworm-python:1)
#   COMPARNA_MXFOLD2_VENV     virtualenv dir (default var/venvs/mxfold2, where the catalogue looks)
#   COMPARNA_TORCH            pip requirement or wheel file for torch (default: the CPU wheel in
#                             /opt/wheels when present; otherwise MXfold2 is skipped unless this is set,
#                             e.g. to torch==2.13.0, which from PyPI is a CUDA build of several GB)
#   COMPARNA_SKIP_IMAGE=1, COMPARNA_SKIP_MXFOLD2=1  skip a step
set -euo pipefail
cd "$(dirname "$0")/.."

IMAGE=${COMPARNA_PREDICTOR_IMAGE:-localhost/comparna-bookworm-python:1}
MXFOLD2_VENV=${COMPARNA_MXFOLD2_VENV:-var/venvs/mxfold2}
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

# --- 3. MXfold2's virtualenv ---------------------------------------------------------------------------
mxfold2_ok() {
  [ -x "$MXFOLD2_VENV/bin/python" ] && "$MXFOLD2_VENV/bin/python" -c 'import mxfold2.interface, torch' 2>/dev/null
}
if [ "${COMPARNA_SKIP_MXFOLD2:-0}" = 1 ]; then
  note "MXfold2 step skipped (COMPARNA_SKIP_MXFOLD2=1)"
elif mxfold2_ok; then
  note "MXfold2 virtualenv present ($MXFOLD2_VENV)"
else
  torch=${COMPARNA_TORCH:-}
  if [ -z "$torch" ] && [ -f "$TORCH_WHEEL" ]; then torch=$TORCH_WHEEL; fi
  if [ -z "$torch" ]; then
    skip "MXfold2: no torch 2.13.0 CPU wheel at $TORCH_WHEEL; set COMPARNA_TORCH=torch==2.13.0 to take it
    from PyPI (a CUDA build of several GB). The catalogue lists MXfold2 only when its virtualenv exists."
  elif ! [ -x /usr/bin/python3 ] || ! command -v g++ >/dev/null 2>&1; then
    skip "MXfold2: /usr/bin/python3 or g++ missing"
  else
    note "building the MXfold2 virtualenv in $MXFOLD2_VENV (torch from $torch; about 2 minutes)"
    rm -rf "$MXFOLD2_VENV"
    mkdir -p "$(dirname "$MXFOLD2_VENV")"
    log=$(mktemp /tmp/comparna-mxfold2-XXXXXX.log)
    if PYTHON=/usr/bin/python3 sh predictors/programs/setup_mxfold2.sh "$MXFOLD2_VENV" "$torch" >"$log" 2>&1 \
        && mxfold2_ok; then
      rm -f "$log"
      chmod -R a+rX "$MXFOLD2_VENV"  # the sandbox runs predictors as an unprivileged uid
      note "MXfold2 $("$MXFOLD2_VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("mxfold2"))') ready"
    else
      # A half-built virtualenv would make the catalogue list a method that cannot run.
      rm -rf "$MXFOLD2_VENV"
      tail -n 20 "$log" >&2
      skip "MXfold2: building its virtualenv failed (log: $log); the catalogue leaves MXfold2 out"
    fi
  fi
fi
note "done"
