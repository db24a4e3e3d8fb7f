"""A method owner's container image, built for real from the registry-free base image and saved as an archive.

The image adds ``/opt/predict.py`` (a small greedy stem finder in plain Python: the base image has
Python 3 and nothing else) and an ``ENTRYPOINT`` that would fail (``/bin/false``), so a run proves the
spec's command replaced it. ``--probe`` makes it report what it can reach (network, the host's files, the
image's root) on stderr and exit 3. The archive is what ``podman save`` writes — and, as a hostile owner
would, its manifest claims the name of the project's base image (loading must not re-tag it).
"""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import tarfile
import uuid
from pathlib import Path

BASE_IMAGE = "localhost/comparna-bookworm-python:1"

PREDICT = r'''
import os, socket, sys

PAIRS = {("G", "C"), ("C", "G"), ("A", "U"), ("U", "A"), ("G", "U"), ("U", "G")}


def stems(seq, lo, hi, out):
    """Greedy: the longest stem of canonical pairs (hairpin loop >= 3) in seq[lo:hi], then either side."""
    best = (0, 0, 0)
    for i in range(lo, hi):
        for j in range(hi - 1, i + 3, -1):
            k = 0
            while i + k < j - k - 3 and (seq[i + k], seq[j - k]) in PAIRS:
                k += 1
            if k > best[0]:
                best = (k, i, j)
    k, i, j = best
    if k < 3:
        return
    for d in range(k):
        out[i + d], out[j - d] = "(", ")"
    stems(seq, lo, i, out)
    stems(seq, i + k, j - k + 1, out)
    stems(seq, j + 1, hi, out)


def probe():
    try:
        socket.create_connection(("1.1.1.1", 53), timeout=1)
        print("network: reachable", file=sys.stderr)
    except OSError as exc:
        print(f"network: unreachable ({exc})", file=sys.stderr)
    print(f"host paths visible: {[p for p in sys.argv[3:] if os.path.exists(p)]}", file=sys.stderr)
    try:
        open("/opt/escape", "w").write("x")
        print("root: writable", file=sys.stderr)
    except OSError as exc:
        print(f"root: read-only ({exc})", file=sys.stderr)
    print(f"uid: {os.getuid()}", file=sys.stderr)
    sys.exit(3)


if sys.argv[1] == "--probe":
    probe()
lines = open(sys.argv[1]).read().split("\n")
seq = "".join(line.strip() for line in lines if line and not line.startswith(">")).upper().replace("T", "U")
out = ["."] * len(seq)
stems(seq, 0, len(seq), out)
print("".join(out))
'''


def build_owner_image_archive(dest: Path, *, engine: str = "podman") -> Path:
    """Build the image, save it as a Docker archive at ``dest`` (its manifest claiming ``BASE_IMAGE``)."""
    work = dest.parent / f"owner-image-build-{uuid.uuid4().hex[:8]}"
    work.mkdir(parents=True)
    tag = f"localhost/comparna-test-owner-{uuid.uuid4().hex[:12]}:1"
    try:
        (work / "predict.py").write_text(PREDICT)
        (work / "Containerfile").write_text(
            f'FROM {BASE_IMAGE}\nCOPY predict.py /opt/predict.py\nENTRYPOINT ["/bin/false"]\n'
        )
        subprocess.run(
            [engine, "build", "-q", "--pull=never", "--network=none", "-t", tag, str(work)],
            check=True,
            capture_output=True,
            timeout=300,
        )
        saved = work / "saved.tar"
        subprocess.run(
            [engine, "save", "--format", "docker-archive", "-o", str(saved), tag],
            check=True,
            capture_output=True,
            timeout=300,
        )
        # The hostile part: the archive names the project's base image as its own tag.
        with tarfile.open(saved) as src, tarfile.open(dest, "w") as out:
            for info in src:
                data = src.extractfile(info) if info.isfile() else None
                if info.name == "manifest.json":
                    manifest = json.loads(data.read())
                    manifest[0]["RepoTags"] = [BASE_IMAGE]
                    blob = json.dumps(manifest).encode()
                    info.size = len(blob)
                    data = io.BytesIO(blob)
                out.addfile(info, data)
        return dest
    finally:
        subprocess.run([engine, "rmi", "--force", tag], capture_output=True, timeout=120)
        shutil.rmtree(work, ignore_errors=True)


def image_id(ref: str, engine: str = "podman") -> str | None:
    proc = subprocess.run(
        [engine, "image", "inspect", "--format", "{{.Id}}", ref], capture_output=True, text=True
    )
    return proc.stdout.strip() if proc.returncode == 0 else None
