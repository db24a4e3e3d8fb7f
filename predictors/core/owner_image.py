"""Image predictors: a method owner's own container image, run like the container runner's (issue 17).

The owner uploads an image archive (:mod:`predictors.core.image_archive` checks it and keeps a sanitised copy
named by the upload's SHA-256 in :func:`archives_dir`); the spec (``kind="image"``) names that SHA-256 and
the command to run inside the image. A worker loads the archive into its container engine the first time
it runs the method (under a lock, so concurrent runs load it once) and tags it
:func:`~predictors.core.image_archive.image_tag`; every run then gets exactly the container runner's
limits: no network, read-only root, private ``/tmp``, memory/CPU/pids/file-size limits, all capabilities
dropped, no new privileges, the sandbox uid. Unlike the project's own image, nothing of CompaRNA is
mounted (no virtualenv, no wrappers): only the job directory at ``/job``. The image's entrypoint,
healthcheck and volumes are ignored — the spec's command is what runs.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from predictors.core.container import ContainerRunner
from predictors.core.image_archive import image_tag
from predictors.core.job import Job, RunResult
from predictors.core.spec import PredictorSpec
from predictors.core.workspace import data_dir

LOAD_TIMEOUT_S = 900


class ImageUnavailable(RuntimeError):
    """The image could not be made available on this worker (``infrastructure`` is whether to retry)."""

    def __init__(self, message: str, *, infrastructure: bool):
        super().__init__(message)
        self.infrastructure = infrastructure


def archives_dir() -> Path:
    """Where sanitised image archives are kept: ``COMPARNA_IMAGES_DIR`` or ``<data dir>/images``.

    Workers on several hosts need it shared (like the database); it is never visible to a predictor.
    """
    configured = os.environ.get("COMPARNA_IMAGES_DIR", "").strip()
    return Path(configured).resolve() if configured else data_dir() / "images"


def ensure_loaded(sha256: str, *, engine: str = "podman") -> str:
    """Load the archive with this SHA-256 into the engine unless present; returns the image's tag.

    Raises
    ------
    ImageUnavailable
        ``infrastructure=True`` when the engine or the archive file is missing on this worker (another
        worker, or a later retry, may do better); False when the engine refuses the archive.
    """
    tag = image_tag(sha256)
    exe = shutil.which(engine)
    if exe is None:
        raise ImageUnavailable(f"container engine {engine!r} is not installed here", infrastructure=True)
    if ContainerRunner.image_exists(tag, engine):
        return tag
    archive = archives_dir() / f"{sha256}.tar"
    if not archive.is_file():
        raise ImageUnavailable(f"image archive {sha256[:12]}... is not on this worker", infrastructure=True)
    locks = archives_dir() / ".locks"
    locks.mkdir(mode=0o700, parents=True, exist_ok=True)
    with open(locks / f"{sha256}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if ContainerRunner.image_exists(tag, engine):  # loaded by another process meanwhile
            return tag
        try:
            proc = subprocess.run(
                [exe, "load", "--quiet", "--input", str(archive)],
                capture_output=True,
                text=True,
                timeout=LOAD_TIMEOUT_S,
            )
        except subprocess.TimeoutExpired:
            raise ImageUnavailable("loading the image took too long", infrastructure=True) from None
        loaded = [
            line.split(":", 1)[1].strip()
            for line in proc.stdout.splitlines()
            if line.startswith("Loaded image")
        ]
        if proc.returncode != 0 or len(loaded) != 1:
            raise ImageUnavailable(
                f"the container engine refused the image archive: {(proc.stderr or proc.stdout)[-500:]}",
                infrastructure=False,
            )
        ref = loaded[0].split(",")[0].strip()
        tagged = subprocess.run([exe, "tag", ref, tag], capture_output=True, text=True, timeout=60)
        if tagged.returncode != 0:
            raise ImageUnavailable(f"could not tag the image: {tagged.stderr[-300:]}", infrastructure=True)
    return tag


class OwnerImageRunner(ContainerRunner):
    """Runs a ``kind="image"`` spec in the owner's image with the container runner's limits."""

    def __init__(self, **kwargs: Any):
        super().__init__(**kwargs)
        self.name = f"image-{self.engine}"

    def run(self, spec: PredictorSpec, job: Job) -> RunResult:
        try:
            ensure_loaded(spec.image_archive or "", engine=self.engine)
        except ImageUnavailable as exc:
            return RunResult(
                status="infrastructure_error" if exc.infrastructure else "failed",
                runner=self.name,
                message=str(exc),
                predictor=spec.name,
                fingerprint=spec.fingerprint(),
                limits={"image_archive": spec.image_archive},
            )
        return super().run(spec, job)

    def _mounts(self) -> list[tuple[Path, str]]:
        return []  # the owner's image brings its own programs; nothing of CompaRNA is mounted

    def _image(self, spec: PredictorSpec) -> str | None:
        return image_tag(spec.image_archive) if spec.image_archive else None

    def _image_options(self, spec: PredictorSpec) -> list[str]:
        # The spec's argv is the whole command: the image's entrypoint, healthcheck and volumes are ignored.
        return ["--entrypoint", "", "--no-healthcheck", "--image-volume", "ignore"]

    def _container_env(self) -> dict[str, str]:
        # The image's own PATH (and Python path) stay: its programs may live in /opt/conda/bin or similar.
        env = super()._container_env()
        return {k: v for k, v in env.items() if k not in ("PATH", "PYTHONPATH")}

    def _extra_limits(self, spec: PredictorSpec) -> dict[str, Any]:
        return {
            **super()._extra_limits(spec),
            "image": self._image(spec),
            "image_archive": spec.image_archive,
            "mounts": "/job only",
        }
