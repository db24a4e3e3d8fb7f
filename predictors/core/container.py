"""Container runner: Podman (or Docker) with no network, a read-only root and memory/CPU/pids limits.

Used when a spec names an image and an engine is installed (:func:`predictors.core.runners.select_runner`).
Images need no registry: e.g. ``debootstrap --variant=minbase --include=python3 bookworm ROOT`` and
``tar -C ROOT -c . | podman import - localhost/comparna-bookworm-python:1``. The Python environment, the
method virtualenvs and the wrapper packages are mounted read-only as in the bubblewrap sandbox
(:func:`predictors.core.sandbox.program_mounts`) — never the repository, the data directory or ``.git`` —
so the same ``{python} -m predictors.programs...`` commands run inside a Debian image whose Python
matches the host's.
"""

from __future__ import annotations

import hashlib
import os
import resource
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from predictors.core.job import JOB_MOUNT, Job
from predictors.core.limits import effective_memory_mb
from predictors.core.process import ProcessRunner, decode_wrapped_returncode, sandbox_env
from predictors.core.sandbox import DEFAULT_SHM_MB as SHM_MB
from predictors.core.sandbox import SANDBOX_GID, SANDBOX_UID, program_mounts
from predictors.core.spec import PredictorSpec
from predictors.core.workspace import CGROUP_RE, process_token, token_alive


class ContainerRunner(ProcessRunner):
    """Runs each job in a fresh container (``podman run --rm``) with the spec's limits.

    Limits are applied by the engine (``--memory``, ``--pids-limit``, ``--cpus 1``, ``--ulimit``
    cpu/fsize/nofile/nproc); the engine's client gets only RLIMIT_CPU/FSIZE/CORE (Go programs reserve
    far more address space than they use, so RLIMIT_AS would break the client, not the predictor). After
    a timeout the container is removed by name, since killing the client leaves it running under conmon.
    """

    name = "container-podman"
    isolation = "container"
    child_rlimits = frozenset({resource.RLIMIT_CPU, resource.RLIMIT_FSIZE, resource.RLIMIT_CORE})

    def __init__(
        self, *, engine: str = "podman", runtime: str | None = "runc", tmp_size_mb: int = 256, **kwargs: Any
    ):
        kwargs.setdefault("use_cgroups", False)  # container processes live in the engine's cgroups
        super().__init__(**kwargs)
        self.engine = engine
        self.runtime = runtime
        self.tmp_size_mb = tmp_size_mb
        self.name = f"container-{engine}"

    @staticmethod
    def available(engine: str = "podman") -> bool:
        return shutil.which(engine) is not None

    @staticmethod
    def image_exists(image: str, engine: str = "podman") -> bool:
        exe = shutil.which(engine)
        if exe is None:
            return False
        return subprocess.run([exe, "image", "exists", image], capture_output=True).returncode == 0

    @staticmethod
    def build_debian_image(
        tag: str, *, suite: str = "bookworm", include: str = "python3", engine: str = "podman"
    ) -> None:
        """Build a minimal Debian image without a registry (debootstrap + ``podman import``).

        Needs root, ``debootstrap`` and a Debian mirror; takes about a minute. The suite should match the
        host's so that the mounted virtualenv's compiled modules load inside the image.
        """
        import tempfile

        with tempfile.TemporaryDirectory(prefix="comparna-rootfs-") as root:
            subprocess.run(
                ["debootstrap", "--variant=minbase", f"--include={include}", suite, root],
                check=True,
                capture_output=True,
            )
            tar = subprocess.Popen(["tar", "-C", root, "-c", "."], stdout=subprocess.PIPE)
            subprocess.run([engine, "import", "-", tag], stdin=tar.stdout, check=True, capture_output=True)
            tar.wait()

    def _mount(self, job: Job) -> str:
        return JOB_MOUNT

    def _container_name(self, job: Job) -> str:
        # Named after this process: a later worker removes the container if this one dies mid-run.
        digest = hashlib.sha1(str(Path(job.workdir).resolve()).encode()).hexdigest()[:8]
        return f"comparna-{process_token()}-{digest}"

    def _prepare(self, job: Job) -> None:
        if os.getuid() == 0:
            os.chown(job.workdir, SANDBOX_UID, SANDBOX_GID)
            for p in Path(job.workdir).rglob("*"):
                os.chown(p, SANDBOX_UID, SANDBOX_GID, follow_symlinks=False)

    def _command(
        self, spec: PredictorSpec, job: Job, inner: list[str], info_fd: int | None, fds: list[int]
    ) -> list[str]:
        exe = shutil.which(self.engine)
        if exe is None:
            raise FileNotFoundError(f"container engine {self.engine!r} is not installed")
        image = self._image(spec)
        if not image:
            raise FileNotFoundError(f"predictor {spec.name!r} names no container image")
        cpu = int(spec.time_limit_s) + 2
        out_cap = self.output_limit_mb * 2**20
        mem_mb = effective_memory_mb(spec.memory_limit_mb)  # never above the host's memory (issue 26)
        cmd = [exe, "run", "--rm", "--pull", "never", "--name", self._container_name(job)]
        if self.runtime:
            cmd += ["--runtime", self.runtime]
        cmd += [
            "--network",
            "none",
            "--read-only",
            "--tmpfs",
            f"/tmp:rw,size={self.tmp_size_mb}m,mode=1777",
            "--memory",
            f"{mem_mb}m",
            "--memory-swap",
            f"{mem_mb}m",
            "--shm-size",
            f"{SHM_MB}m",
            "--pids-limit",
            str(self.max_processes),
            "--cpus",
            "1",
            "--ulimit",
            f"cpu={cpu}:{cpu + 1}",
            "--ulimit",
            f"fsize={out_cap}:{out_cap}",
            "--ulimit",
            "nofile=20000:20000",
            "--ulimit",
            "nproc=4096:4096",
            "--ulimit",
            "core=0:0",
            "--cap-drop",
            "all",
            "--security-opt",
            "no-new-privileges",
            "--user",
            f"{SANDBOX_UID}:{SANDBOX_GID}",
            "--hostname",
            "comparna-container",
        ]
        for host, inside in self._mounts():
            cmd += ["--mount", f"type=bind,source={host},destination={inside},ro=true"]
        workdir = Path(job.workdir).resolve()
        cmd += ["--mount", f"type=bind,source={workdir},destination={JOB_MOUNT}", "-w", JOB_MOUNT]
        for key, value in self._container_env().items():
            cmd += ["--env", f"{key}={value}"]
        return [*cmd, *self._image_options(spec), image, *inner]

    # Hooks for runners of other images (predictors.core.owner_image): what is mounted, which image, and
    # options about the image's own configuration.
    def _mounts(self) -> list[tuple[Path, str]]:
        return program_mounts()

    def _image(self, spec: PredictorSpec) -> str | None:
        return spec.image

    def _container_env(self) -> dict[str, str]:
        return sandbox_env(JOB_MOUNT)

    def _image_options(self, spec: PredictorSpec) -> list[str]:
        return []

    def _cleanup(self, job: Job) -> None:
        # Killing the client leaves the container to conmon; a first removal can race with the
        # container's own stop ("stopping" state), so retry until it is gone.
        exe = shutil.which(self.engine)
        if exe is None:
            return
        name = self._container_name(job)
        for _ in range(10):
            subprocess.run([exe, "rm", "--force", "--time", "0", name], capture_output=True, timeout=60)
            if subprocess.run([exe, "container", "exists", name], capture_output=True).returncode != 0:
                return
            time.sleep(0.2)

    def _extra_limits(self, spec: PredictorSpec) -> dict[str, Any]:
        return {
            "network": "none",
            "filesystem": "read-only image, writable /job, private /tmp",
            "engine": self.engine,
            "image": spec.image,
            "address_space_mb": None,
            "rlimit_nproc": None,
            "container_memory_mb": effective_memory_mb(spec.memory_limit_mb),
            "dev_shm_mb": SHM_MB,
            "container_pids_max": self.max_processes,
            "container_cpus": 1,
            "uid": SANDBOX_UID,
        }

    def _decode_returncode(self, rc: int) -> tuple[int | None, int | None]:
        return decode_wrapped_returncode(rc)


def clean_container_leftovers(engine: str = "podman") -> int:
    """Remove the containers of runs whose worker is known dead (see :func:`process_token`).

    The engine's client dies with the worker, but the container itself lives on under the engine's
    monitor; this removes it. Containers of live or unknown processes are left alone.
    """
    exe = shutil.which(engine)
    if exe is None:
        return 0
    try:
        out = subprocess.run(
            [exe, "ps", "--all", "--format", "{{.Names}}", "--filter", "name=^comparna-"],
            capture_output=True,
            text=True,
            timeout=60,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return 0
    removed = 0
    for name in out.split():
        m = CGROUP_RE.match(name)  # the same comparna-<token>-<hex8> shape as run cgroups
        if m and token_alive(m["token"]) is False:
            subprocess.run([exe, "rm", "--force", "--time", "0", name], capture_output=True, timeout=60)
            removed += 1
    return removed
