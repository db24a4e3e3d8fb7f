"""Container image archives uploaded by method owners: checked, bounded and stripped of names.

An owner saves their image with ``podman save`` / ``docker save`` (a Docker archive, ``manifest.json``) or
``podman save --format oci-archive`` (an OCI layout, ``index.json``), optionally gzip-compressed, and uploads
it. The archive is hostile input, so before the container engine ever sees it :func:`prepare_archive`

- caps its size (as uploaded) and everything decompressed from it — the outer archive and every layer, so a
  small "gzip bomb" cannot fill the disk when the engine unpacks it;
- accepts one image only, made of regular files at plain relative paths (no links, devices, ``..``);
- verifies OCI blobs against their SHA-256 names and reads every layer as a tar archive, refusing block
  devices and character devices other than /dev/null-like ones (nothing a predictor needs; defence in
  depth besides the runtime's own /dev) and zstd-compressed layers (which could not be bounded here);
  setuid files are accepted: containers run with ``no-new-privileges``, so the bit has no effect;
- drops every name the archive carries (``RepoTags``, the legacy ``repositories`` file, OCI
  ``ref.name`` annotations): loading it must never re-tag an existing image, e.g. the project's base
  image or another owner's. The engine then knows it only by its content-addressed id, and CompaRNA tags it
  :func:`image_tag` of the upload's SHA-256.

The sanitised archive is written to ``<dest>/<sha256>.tar``; :mod:`predictors.core.owner_image` loads it
into the engine on the worker that first runs it. Pure module (standard library only).
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import shutil
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO

from comparna.bounded import TooLarge

GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
MAX_LAYERS = 128
MAX_MEMBERS = 10_000
JSON_MAX_BYTES = 1 << 20
CHUNK = 1 << 20
#: Character devices a Debian root file system ships in /dev (null, zero, full, random, urandom, tty,
#: console, ptmx); the container runtime mounts its own /dev over them anyway. Any other device is refused.
HARMLESS_DEVICES = frozenset({(1, 3), (1, 5), (1, 7), (1, 8), (1, 9), (5, 0), (5, 1), (5, 2)})


class ArchiveRejected(ValueError):
    """The upload is not an acceptable image archive; the message says why."""


@dataclass(frozen=True)
class ArchiveInfo:
    """What was accepted: the upload's identity, its format and sizes, and the image's own settings."""

    sha256: str
    size: int
    format: str
    layers: int
    expanded_bytes: int
    architecture: str
    os: str
    entrypoint: list[str] | None
    cmd: list[str] | None

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def image_tag(sha256: str) -> str:
    """The tag CompaRNA gives the image loaded from the upload with this SHA-256."""
    return f"localhost/comparna-owner:{sha256}"


class _Capped(io.RawIOBase):
    """A read-only stream that raises :class:`TooLarge` once more than ``cap`` bytes were read from it."""

    def __init__(self, fh: IO[bytes], cap: int, what: str):
        self.fh, self.cap, self.what, self.count = fh, cap, what, 0

    def readable(self) -> bool:
        return True

    def read(self, n: int = -1) -> bytes:
        data = self.fh.read(CHUNK if n is None or n < 0 else n)
        self.count += len(data)
        if self.count > self.cap:
            raise TooLarge(f"{self.what} decompresses to more than {self.cap / 2**20:g} MB")
        return data

    def readinto(self, buffer) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(CHUNK):
            h.update(block)
    return h.hexdigest()


def _magic(path: Path) -> bytes:
    with open(path, "rb") as fh:
        return fh.read(4)


def _safe_name(name: str) -> str:
    p = PurePosixPath(name)
    if name.startswith("/") or "\\" in name or any(part in ("..",) for part in p.parts) or len(name) > 255:
        raise ArchiveRejected(f"archive member {name[:100]!r} has an unsafe path")
    return str(p) if str(p) != "." else ""


def _json(data: bytes, what: str):
    if len(data) > JSON_MAX_BYTES:
        raise ArchiveRejected(f"{what} is larger than {JSON_MAX_BYTES} bytes")
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise ArchiveRejected(f"{what} is not valid JSON: {exc}") from None


class _Outer:
    """Random access to the regular files of the (uncompressed) outer tar, by normalised name."""

    def __init__(self, path: Path, budget: int):
        try:
            self.tar = tarfile.open(path, "r:")
            members = []
            total = 0
            for info in self.tar:
                if len(members) >= MAX_MEMBERS:
                    raise ArchiveRejected(f"the archive holds more than {MAX_MEMBERS} entries")
                members.append(info)
                total += info.size
                if total > budget:
                    raise TooLarge(f"the archive holds more than {budget / 2**20:g} MB")
        except tarfile.TarError as exc:
            raise ArchiveRejected(f"not a tar archive: {exc}") from None
        self.files: dict[str, tarfile.TarInfo] = {}
        for info in members:
            name = _safe_name(info.name)
            if info.isfile():
                self.files[name] = info
            # Directories carry nothing; links (the Docker archive's legacy <id>/layer.tar links) and any
            # other entry type are dropped: the manifest names every file the engine needs.

    def has(self, name: str) -> bool:
        return name in self.files

    def open(self, name: str) -> IO[bytes]:
        if name not in self.files:
            raise ArchiveRejected(f"the archive lacks {name!r}, which its manifest names")
        fh = self.tar.extractfile(self.files[name])
        assert fh is not None
        return fh

    def read_small(self, name: str) -> bytes:
        if name in self.files and self.files[name].size > JSON_MAX_BYTES:
            raise ArchiveRejected(f"{name} is larger than {JSON_MAX_BYTES} bytes")
        return self.open(name).read()

    def close(self) -> None:
        self.tar.close()


def _scan_layer(fh: IO[bytes], budget: list[int], what: str) -> int:
    """Read one layer (tar, possibly gzip) within ``budget[0]`` bytes; returns its expanded size."""
    head = fh.read(4)
    rest = io.BufferedReader(_Chain(head, fh), CHUNK)
    if head.startswith(ZSTD_MAGIC):
        raise ArchiveRejected(f"{what} is zstd-compressed; save the image uncompressed or with gzip")
    stream: IO[bytes] = gzip.GzipFile(fileobj=rest, mode="rb") if head.startswith(GZIP_MAGIC) else rest
    capped = _Capped(stream, budget[0], "the image's layers")
    size = 0
    try:
        with tarfile.open(fileobj=capped, mode="r|") as tar:
            for info in tar:
                if info.isblk() or (info.ischr() and (info.devmajor, info.devminor) not in HARMLESS_DEVICES):
                    raise ArchiveRejected(f"{what} holds a device node ({info.name[:100]}); not accepted")
                size += info.size
        # tarfile stops at the end-of-archive marker; padding after it still counts against the cap
        while capped.read(CHUNK):
            pass
    except (tarfile.TarError, EOFError, OSError, gzip.BadGzipFile) as exc:
        raise ArchiveRejected(f"{what} is not a readable tar archive: {exc}") from None
    budget[0] -= capped.count
    return capped.count


class _Chain(io.RawIOBase):
    """``head`` then the rest of ``fh`` (to sniff a stream's first bytes without seeking)."""

    def __init__(self, head: bytes, fh: IO[bytes]):
        self.head, self.fh = head, fh

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if self.head:
            n = min(len(buffer), len(self.head))
            buffer[:n], self.head = self.head[:n], self.head[n:]
            return n
        data = self.fh.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


def _digest_name(digest: object, what: str) -> str:
    if not isinstance(digest, str) or not digest.startswith("sha256:") or len(digest) != 71:
        raise ArchiveRejected(f"{what}: digest {str(digest)[:80]!r} is not sha256:<64 hex digits>")
    hexpart = digest[7:]
    if any(c not in "0123456789abcdef" for c in hexpart):
        raise ArchiveRejected(f"{what}: digest {digest[:80]!r} is not sha256:<64 hex digits>")
    return f"blobs/sha256/{hexpart}"


def prepare_archive(
    src: str | Path, dest_dir: str | Path, *, max_bytes: int, max_expanded_bytes: int
) -> ArchiveInfo:
    """Check an uploaded image archive and write its sanitised copy to ``dest_dir/<sha256>.tar``.

    Parameters
    ----------
    src : path
        The upload as received (tar or tar.gz).
    max_bytes : int
        Largest upload accepted.
    max_expanded_bytes : int
        Largest total of everything decompressed from it (the outer tar plus every layer's content).

    Raises
    ------
    ArchiveRejected, TooLarge
        With a message for the owner.
    """
    src, dest_dir = Path(src), Path(dest_dir)
    size = src.stat().st_size
    if size > max_bytes:
        raise TooLarge(f"the archive is {size / 2**20:.1f} MB, over the {max_bytes / 2**20:g} MB limit")
    if size == 0:
        raise ArchiveRejected("the archive is empty")
    sha = _sha256_file(src)
    dest_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest_dir, prefix=".incoming-") as tmp:
        plain = src
        if _magic(src).startswith(GZIP_MAGIC):
            plain = Path(tmp) / "plain.tar"
            try:
                with gzip.open(src, "rb") as gz, open(plain, "wb") as out:
                    capped = _Capped(gz, max_expanded_bytes, "the archive")
                    while block := capped.read(CHUNK):
                        out.write(block)
            except (OSError, EOFError, gzip.BadGzipFile) as exc:
                raise ArchiveRejected(f"the archive is not valid gzip: {exc}") from None
        outer = _Outer(plain, max_expanded_bytes)
        try:
            budget = [max_expanded_bytes]
            if outer.has("manifest.json"):
                info, keep, rewritten = _docker(outer, budget)
            elif outer.has("index.json") and outer.has("oci-layout"):
                info, keep, rewritten = _oci(outer, budget)
            else:
                raise ArchiveRejected(
                    "not an image archive: neither manifest.json (docker-archive) nor index.json + "
                    "oci-layout (oci-archive); make it with 'podman save' or 'docker save'"
                )
            final = dest_dir / f"{sha}.tar"
            partial = Path(tmp) / "sanitised.tar"
            with tarfile.open(partial, "w", format=tarfile.PAX_FORMAT) as out:
                for name, data in rewritten.items():
                    ti = tarfile.TarInfo(name)
                    ti.size, ti.mode = len(data), 0o444
                    out.addfile(ti, io.BytesIO(data))
                for name in keep:
                    src_info = outer.files[name]
                    ti = tarfile.TarInfo(name)
                    ti.size, ti.mode = src_info.size, 0o444
                    out.addfile(ti, outer.open(name))
            os.chmod(partial, 0o600)
            shutil.move(str(partial), final)
        finally:
            outer.close()
    return ArchiveInfo(sha256=sha, size=size, **info)


def _config_info(config: object) -> dict:
    if not isinstance(config, dict):
        raise ArchiveRejected("the image configuration is not a JSON object")
    inner = config.get("config") or {}
    inner = inner if isinstance(inner, dict) else {}
    return {
        "architecture": str(config.get("architecture", ""))[:32],
        "os": str(config.get("os", ""))[:32],
        "entrypoint": inner.get("Entrypoint") if isinstance(inner.get("Entrypoint"), list) else None,
        "cmd": inner.get("Cmd") if isinstance(inner.get("Cmd"), list) else None,
    }


def _check_platform(info: dict) -> None:
    if info["os"] and info["os"] != "linux":
        raise ArchiveRejected(f"the image is for {info['os']!r}; a linux image is needed")


def _docker(outer: _Outer, budget: list[int]) -> tuple[dict, list[str], dict[str, bytes]]:
    manifest = _json(outer.read_small("manifest.json"), "manifest.json")
    if not isinstance(manifest, list) or len(manifest) != 1 or not isinstance(manifest[0], dict):
        raise ArchiveRejected("manifest.json must describe exactly one image (save one image per archive)")
    entry = manifest[0]
    config_name, layers = entry.get("Config"), entry.get("Layers")
    if not isinstance(config_name, str) or not isinstance(layers, list) or not layers:
        raise ArchiveRejected("manifest.json lacks Config or Layers")
    if len(layers) > MAX_LAYERS or not all(isinstance(x, str) for x in layers):
        raise ArchiveRejected(f"manifest.json must list 1..{MAX_LAYERS} layer files")
    config_name = _safe_name(config_name)
    layers = [_safe_name(x) for x in layers]
    info = _config_info(_json(outer.read_small(config_name), config_name))
    _check_platform(info)
    expanded = 0
    for k, name in enumerate(layers):
        expanded += _scan_layer(outer.open(name), budget, f"layer {k + 1} ({name[:80]})")
    clean = [{"Config": config_name, "RepoTags": None, "Layers": layers}]
    keep = [config_name, *dict.fromkeys(layers)]
    return (
        {"format": "docker-archive", "layers": len(layers), "expanded_bytes": expanded, **info},
        keep,
        {"manifest.json": json.dumps(clean).encode()},
    )


def _verified(outer: _Outer, name: str, what: str) -> None:
    h = hashlib.sha256()
    fh = outer.open(name)
    while block := fh.read(CHUNK):
        h.update(block)
    if h.hexdigest() != name.rsplit("/", 1)[-1]:
        raise ArchiveRejected(f"{what}: blob {name} does not match its SHA-256")


def _oci(outer: _Outer, budget: list[int]) -> tuple[dict, list[str], dict[str, bytes]]:
    index = _json(outer.read_small("index.json"), "index.json")
    manifests = index.get("manifests") if isinstance(index, dict) else None
    if not isinstance(manifests, list) or len(manifests) != 1 or not isinstance(manifests[0], dict):
        raise ArchiveRejected("index.json must list exactly one image manifest (save one image per archive)")
    descriptor = manifests[0]
    if descriptor.get("mediaType") not in (
        "application/vnd.oci.image.manifest.v1+json",
        "application/vnd.docker.distribution.manifest.v2+json",
    ):
        raise ArchiveRejected(
            f"index.json names a {str(descriptor.get('mediaType'))[:80]!r}; a single-platform image manifest "
            "is needed (save one platform)"
        )
    manifest_name = _digest_name(descriptor.get("digest"), "index.json")
    _verified(outer, manifest_name, "image manifest")
    manifest = _json(outer.read_small(manifest_name), "the image manifest")
    if not isinstance(manifest, dict):
        raise ArchiveRejected("the image manifest is not a JSON object")
    config_desc, layer_descs = manifest.get("config"), manifest.get("layers")
    if not isinstance(config_desc, dict) or not isinstance(layer_descs, list) or not layer_descs:
        raise ArchiveRejected("the image manifest lacks config or layers")
    if len(layer_descs) > MAX_LAYERS or not all(isinstance(d, dict) for d in layer_descs):
        raise ArchiveRejected(f"the image manifest must list 1..{MAX_LAYERS} layers")
    config_name = _digest_name(config_desc.get("digest"), "image config")
    _verified(outer, config_name, "image config")
    info = _config_info(_json(outer.read_small(config_name), "the image config"))
    _check_platform(info)
    expanded = 0
    layer_names = []
    for k, desc in enumerate(layer_descs):
        if "zstd" in str(desc.get("mediaType", "")):
            raise ArchiveRejected(f"layer {k + 1} is zstd-compressed; save it uncompressed or with gzip")
        name = _digest_name(desc.get("digest"), f"layer {k + 1}")
        _verified(outer, name, f"layer {k + 1}")
        expanded += _scan_layer(outer.open(name), budget, f"layer {k + 1}")
        layer_names.append(name)
    clean_index = {
        "schemaVersion": 2,
        "manifests": [{k: descriptor[k] for k in ("mediaType", "digest", "size") if k in descriptor}],
    }
    keep = list(dict.fromkeys([manifest_name, config_name, *layer_names]))
    return (
        {"format": "oci-archive", "layers": len(layer_names), "expanded_bytes": expanded, **info},
        keep,
        {"oci-layout": b'{"imageLayoutVersion":"1.0.0"}', "index.json": json.dumps(clean_index).encode()},
    )
