#!/usr/bin/env bash
# Installs everything CompaRNA needs on a fresh Debian 12 machine: Debian packages (when missing), a
# virtualenv on Debian's Python 3.11 with the pinned requirements, and the default Rfam library.
# Safe to run again: it only does what is missing.
#   scripts/install.sh         what runs CompaRNA: requirements.txt (`make run`)
#   scripts/install.sh --dev   and the test and lint tools: requirements-dev.txt (`make test`, `make lint`)
set -euo pipefail
cd "$(dirname "$0")/.."
DEV=0
for arg in "$@"; do
  case "$arg" in
    --dev) DEV=1 ;;
    *) echo "usage: $0 [--dev]" >&2; exit 2 ;;
  esac
done

APT_PACKAGES=(python3 python3-venv python3-dev build-essential cd-hit infernal infernal-doc
              postgresql redis-server bubblewrap chromium curl docker-compose)
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "==> installing Debian packages: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

PY=/usr/bin/python3
if [ ! -x .venv/bin/python ] || ! .venv/bin/python -c 'import sys; assert sys.version_info[:2] == (3, 11)' 2>/dev/null; then
  echo "==> creating .venv with $($PY --version)"
  rm -rf .venv
  $PY -m venv .venv
fi
# A stamp per set, holding the checksums of the files it was installed from: a changed file installs again.
# The runtime set's stamp is also written by --dev (requirements-dev.txt includes requirements.txt).
install_set() {  # install_set STAMP FILE...: pip install -r the last FILE unless STAMP matches them all
  local stamp=$1; shift
  local want; want=$(sha256sum "$@" | cut -d' ' -f1 | tr '\n' ' ')
  if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    echo "==> installing Python packages (${*: -1})"
    .venv/bin/pip install -q --upgrade pip
    .venv/bin/pip install -q -r "${@: -1}"
    echo "$want" > "$stamp"
    return 0
  fi
  return 1
}
if [ "$DEV" = 1 ]; then
  if install_set .venv/.requirements-dev.sha256 requirements.txt requirements-dev.txt; then
    sha256sum requirements.txt | cut -d' ' -f1 | tr '\n' ' ' > .venv/.requirements.sha256
  fi
else
  install_set .venv/.requirements.sha256 requirements.txt || true
fi
# Runners and predictors outside the venv: Podman + a Debian image for the container runner, MXfold2's venv.
bash scripts/install_predictors.sh
if [ ! -f var/rfam/rfam_library.json ]; then
  echo "==> assembling the default Rfam library (Debian infernal-doc testsuite families) in var/rfam"
  .venv/bin/python manage.py build_rfam_library /usr/share/doc/infernal/examples/testsuite var/rfam
fi
echo "==> CompaRNA installed"
