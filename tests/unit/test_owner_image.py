"""Owners' container images: hostile archives refused, real ones sanitised, loaded into Podman, run contained.

The real archive is built in the test session from the registry-free base image
(``tests/support/owner_image.py``); the hostile ones are small tar files made here.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import subprocess
import tarfile
from pathlib import Path

import pytest

from comparna.bounded import TooLarge
from predictors.core.container import ContainerRunner
from predictors.core.image_archive import ArchiveRejected, image_tag, prepare_archive
from predictors.core.owner_image import OwnerImageRunner
from predictors.core.runners import REPO_ROOT, SANDBOX_UID, run_prediction, select_runner
from predictors.core.spec import PredictorSpec
from predictors.core.workspace import data_dir
from tests.support.owner_image import BASE_IMAGE, image_id

TRNA = "GCGGAUUUAGCUCAGUUGGGAGAGCGCCAGACUGAAGAUCUGGAGGUCCUGUGUUCGAUCCACAGAAUUCGCACCA"
MB = 2**20


def image_spec(sha: str, *argv: str) -> PredictorSpec:
    return PredictorSpec(
        name="MyImageFold", program="myfold", version="1", kind="image", image_archive=sha,
        argv=argv or ("python3", "/opt/predict.py", "{fasta}"), time_limit_s=20, memory_limit_mb=512,
    )


@pytest.fixture
def images_dir(tmp_path, monkeypatch) -> Path:
    d = tmp_path / "images"
    monkeypatch.setenv("COMPARNA_IMAGES_DIR", str(d))
    return d


def test_owner_archive_is_sanitised_loaded_and_run_contained(owner_image_archive, images_dir):
    base_before = image_id(BASE_IMAGE)
    info = prepare_archive(owner_image_archive, images_dir, max_bytes=2048 * MB, max_expanded_bytes=4096 * MB)
    assert info.format == "docker-archive" and info.layers == 2 and info.entrypoint == ["/bin/false"]
    assert info.sha256 == hashlib.sha256(owner_image_archive.read_bytes()).hexdigest()
    with tarfile.open(images_dir / f"{info.sha256}.tar") as tar:
        names = tar.getnames()
        manifest = json.loads(tar.extractfile("manifest.json").read())
    assert manifest[0]["RepoTags"] is None and "repositories" not in names
    assert all(tar_name.count("/") == 0 for tar_name in names)  # the legacy <id>/layer.tar links are gone
    tag = image_tag(info.sha256)
    subprocess.run(["podman", "rmi", "--force", tag], capture_output=True)
    try:
        spec = image_spec(info.sha256)
        assert spec.problems() == [] and isinstance(select_runner(spec), OwnerImageRunner)
        result = run_prediction(spec, TRNA)
        assert result.status == "ok", (result.message, result.stderr_tail)
        assert result.runner == "image-podman" and result.structure.length == len(TRNA)
        assert len(result.structure.pairs) >= 4
        assert result.limits["network"] == "none" and result.limits["mounts"] == "/job only"
        # the archive claimed the base image's name: loading it did not re-tag the base image
        assert image_id(BASE_IMAGE) == base_before
        assert ContainerRunner.image_exists(tag)

        probe = run_prediction(
            image_spec(info.sha256, "python3", "/opt/predict.py", "--probe", "{fasta}",
                       str(REPO_ROOT / ".venv"), str(data_dir()), str(REPO_ROOT)),
            TRNA,
        )
        assert probe.status == "failed" and probe.exit_code == 3, probe
        err = probe.stderr_tail
        assert "network: unreachable" in err and "host paths visible: []" in err, err
        assert "root: read-only" in err and f"uid: {SANDBOX_UID}" in err, err
    finally:
        subprocess.run(["podman", "rmi", "--force", tag], capture_output=True)


def test_image_spec_validation():
    sha = "a" * 64
    assert image_spec(sha).problems() == []
    assert any("SHA-256" in p for p in image_spec("nothex").problems())
    assert any("{python}" in p for p in image_spec(sha, "{python}", "-m", "x", "{fasta}").problems())
    assert image_spec(sha).fingerprint() != image_spec("b" * 64).fingerprint()


# -- hostile archives (no engine needed) --------------------------------------------------------------------
def _tar(members: dict[str, bytes | tarfile.TarInfo]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in members.items():
            if isinstance(data, tarfile.TarInfo):
                tar.addfile(data)
                continue
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            tar.addfile(ti, io.BytesIO(data))
    return buf.getvalue()


def docker_archive(layer: bytes, *, images: int = 1, diff_id: str | None = None) -> bytes:
    config = json.dumps({
        "os": "linux", "architecture": "amd64", "config": {"Entrypoint": ["/bin/sh"]},
        "rootfs": {"type": "layers", "diff_ids": [diff_id or "sha256:" + hashlib.sha256(layer).hexdigest()]},
    }).encode()
    entry = {"Config": "config.json", "RepoTags": [BASE_IMAGE], "Layers": ["l.tar"]}
    manifest = json.dumps([entry] * images).encode()
    return _tar({"manifest.json": manifest, "config.json": config, "l.tar": layer})


def refused(tmp_path: Path, data: bytes, **caps) -> str:
    src = tmp_path / "upload.tar"
    src.write_bytes(data)
    caps = {"max_bytes": 50 * MB, "max_expanded_bytes": 20 * MB, **caps}
    with pytest.raises((ArchiveRejected, TooLarge)) as exc:
        prepare_archive(src, tmp_path / "images", **caps)
    assert not list((tmp_path / "images").glob("*.tar"))  # nothing kept
    return str(exc.value)


def test_hostile_archives_are_refused_with_a_reason(tmp_path):
    ok_layer = _tar({"opt/predict.py": b"print()"})
    assert "not a tar" in refused(tmp_path, b"MZ\x90\x00 definitely not a tar archive" * 100)
    assert "unsafe path" in refused(tmp_path, _tar({"../../etc/cron.d/x": b"* * * * * root sh"}))
    assert "neither manifest.json" in refused(tmp_path, _tar({"hello.txt": b"hi"}))
    assert "exactly one image" in refused(tmp_path, docker_archive(ok_layer, images=2))
    assert "over the" in refused(tmp_path, docker_archive(ok_layer), max_bytes=1000)
    # a gzip bomb: 40 MB of zeros in a layer of ~40 KB
    bomb = gzip.compress(_tar({"zeros": bytes(40 * MB)}), compresslevel=9)
    assert len(bomb) < MB
    assert "more than 20 MB" in refused(tmp_path, docker_archive(bomb))
    dev = tarfile.TarInfo("dev/sda")
    dev.type, dev.devmajor, dev.devminor = tarfile.CHRTYPE, 8, 0
    assert "device node" in refused(tmp_path, docker_archive(_tar({"dev/sda": dev})))
    blk = tarfile.TarInfo("dev/nvme0n1")
    blk.type, blk.devmajor, blk.devminor = tarfile.BLKTYPE, 259, 0
    assert "device node" in refused(tmp_path, docker_archive(_tar({"x": blk})))
    oci = _tar({
        "oci-layout": b'{"imageLayoutVersion":"1.0.0"}',
        "index.json": json.dumps({"manifests": [{
            "mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": "sha256:" + "0" * 64,
        }]}).encode(),
        "blobs/sha256/" + "0" * 64: b'{"config": {}, "layers": []}',
    })
    assert "does not match its SHA-256" in refused(tmp_path, oci)


@pytest.mark.skipif(not ContainerRunner.available(), reason="podman is not installed")
def test_an_archive_the_engine_refuses_is_a_recorded_failure(tmp_path, images_dir):
    """Well-formed to our checks, but its layer does not match the digest its config declares."""
    src = tmp_path / "upload.tar"
    src.write_bytes(docker_archive(_tar({"opt/predict.py": b"print()"}), diff_id="sha256:" + "1" * 64))
    info = prepare_archive(src, images_dir, max_bytes=50 * MB, max_expanded_bytes=50 * MB)
    result = run_prediction(image_spec(info.sha256), TRNA)
    assert result.status == "failed" and "refused the image archive" in result.message, result
    missing = run_prediction(image_spec("c" * 64), TRNA)
    assert missing.status == "infrastructure_error" and "not on this worker" in missing.message
