"""The Podman container runner, for real: a catalogue method and abuse inside a minimal Debian image.

The image is built without a registry (``ContainerRunner.build_debian_image``, debootstrap + podman
import, about a minute); these tests are skipped when Podman or the image is missing.
"""

from __future__ import annotations

import subprocess
from dataclasses import replace

import pytest

from predictors.catalogue import get_spec
from predictors.core.container import ContainerRunner
from predictors.core.runners import REPO_ROOT, run_prediction, select_runner
from predictors.core.spec import PredictorSpec

IMAGE = "localhost/comparna-bookworm-python:1"
TRNA = "GCGGAUUUAGCUCAGUUGGGAGAGCGCCAGACUGAAGAUCUGGAGGUCCUGUGUUCGAUCCACAGAAUUCGCACCA"

pytestmark = pytest.mark.skipif(
    not (ContainerRunner.available() and ContainerRunner.image_exists(IMAGE)),
    reason=f"podman or the image {IMAGE} is not available",
)


def py(code: str, **kw) -> PredictorSpec:
    defaults = dict(time_limit_s=2, memory_limit_mb=256, image=IMAGE)
    defaults.update(kw)
    return PredictorSpec(
        name="abuse", program="t", version="0", argv=("{python}", "-c", code, "{fasta}"), **defaults
    )


def no_containers_left() -> bool:
    out = subprocess.run(["podman", "ps", "-a", "--format", "{{.Names}}"], capture_output=True, text=True)
    return not any(n.startswith("comparna-") for n in out.stdout.split())


@pytest.fixture(scope="module")
def runner() -> ContainerRunner:
    return ContainerRunner()


def test_catalogue_method_in_a_container(runner):
    spec = replace(get_spec("RNAfold-MEA"), image=IMAGE, batch=False)  # images never batch
    assert isinstance(select_runner(spec), ContainerRunner)
    result = run_prediction(spec, TRNA, runner=runner)
    assert result.status == "ok", (result.message, result.stderr_tail)
    assert (
        result.runner == "container-podman" and result.limits["container_memory_mb"] == spec.memory_limit_mb
    )
    assert result.structure.length == 76 and result.probabilities
    assert no_containers_left()


def test_container_infinite_loop_times_out_and_is_removed(runner):
    result = run_prediction(py("while True: pass"), "GGGAAACCC", runner=runner)
    assert result.status == "timeout"
    assert no_containers_left()


def test_container_memory_bomb_fails(runner):
    result = run_prediction(
        # a generous wall clock: under load Podman's start alone can take the 2 s default, and the
        # bomb must meet the memory limit, not the clock
        py("x = []\nwhile True: x.append(bytearray(50 * 2**20))", time_limit_s=30),
        "GGGAAACCC",
        runner=runner,
    )
    assert result.status == "failed" and "memory" in result.message


def test_container_has_no_network_and_read_only_root(runner):
    net = run_prediction(
        py("import socket\nsocket.create_connection(('1.1.1.1', 53), timeout=1)"), "GGGAAACCC", runner=runner
    )
    assert net.status == "failed" and "unreachable" in net.stderr_tail
    # the image's root is read-only
    root = run_prediction(py("open('/escape-marker', 'w').write('x')"), "GGGAAACCC", runner=runner)
    assert root.status == "failed" and "Read-only file system" in root.stderr_tail
    # the checkout is never writable: read-only where it is mounted, unreachable below a 0700 directory
    target = REPO_ROOT / "container-escape-marker"
    write = run_prediction(py(f"open('{target}', 'w').write('x')"), "GGGAAACCC", runner=runner)
    assert write.status == "failed"
    assert any(
        m in write.stderr_tail for m in ("Read-only file system", "Permission denied", "No such file")
    ), write.stderr_tail
    assert not target.exists()


def test_container_fork_bomb_and_output_flood_are_contained(runner):
    fork = run_prediction(
        py(
            "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass",
            time_limit_s=1.5,
        ),
        "GGGAAACCC",
        runner=runner,
    )
    assert fork.status == "timeout"
    flood = run_prediction(
        py("import sys\nc = 'x' * 2**20\nfor _ in range(100): sys.stdout.write(c)"),
        "GGGAAACCC",
        runner=runner,
    )
    assert flood.status == "failed" and "output exceeded" in flood.message
    assert no_containers_left()


def test_container_sees_no_data_dir_nor_checkout(runner):
    # The same exposure as the bubblewrap sandbox: the Python environment and the wrappers, not the repo.
    import uuid

    from predictors.core.workspace import data_dir

    secret = f"sentinel-{uuid.uuid4().hex}"
    sentinel = data_dir() / f"i11-{uuid.uuid4().hex}.sqlite3"
    sentinel.write_text(secret)
    paths = [str(sentinel), str(REPO_ROOT / "comparna" / "settings.py"), str(REPO_ROOT / ".git")]
    code = (
        "import os, sys\n"
        f"for p in {paths!r}:\n"
        "    print(p, os.path.exists(p), file=sys.stderr)\n"
        "print(sorted(os.listdir('/opt/comparna/predictors')), file=sys.stderr)\n"
    )
    try:
        result = run_prediction(py(code, time_limit_s=60), "GGGAAACCC", runner=runner)
    finally:
        sentinel.unlink()
    assert result.stderr_tail.count(" False") == 3, result.stderr_tail
    assert "['core', 'programs']" in result.stderr_tail and secret not in result.stderr_tail


PARENT = """
import sys
from predictors.core.container import ContainerRunner
from predictors.core.runners import run_prediction
from predictors.core.spec import PredictorSpec
spec = PredictorSpec(name="x", program="x", version="0", argv=("{python}", "-c", sys.argv[1], "{fasta}"),
                     time_limit_s=600, image=sys.argv[2])
run_prediction(spec, "GGGAAACCC", runner=ContainerRunner())
"""


def test_container_of_a_killed_worker_is_removed_by_the_next_one():
    import time

    from predictors.core.container import clean_container_leftovers
    from predictors.core.workspace import process_token

    def ours(token: str) -> list[str]:
        out = subprocess.run(["podman", "ps", "-a", "--format", "{{.Names}}"], capture_output=True, text=True)
        return [n for n in out.stdout.split() if n.startswith(f"comparna-{token}-")]

    parent = subprocess.Popen(
        [__import__("sys").executable, "-c", PARENT, "import time; time.sleep(600)", IMAGE], cwd=REPO_ROOT
    )
    try:
        token = process_token(parent.pid)
        deadline = time.monotonic() + 60
        while not ours(token) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert ours(token), "the container did not start"
        parent.kill()  # the engine's client dies with it; the container lives on under conmon
        parent.wait()
        time.sleep(1)
        assert ours(token), "expected the container to outlive its killed worker"
        assert clean_container_leftovers() >= 1
        assert ours(token) == []
    finally:
        if parent.poll() is None:
            parent.kill()
        clean_container_leftovers()


def test_container_memory_is_clamped_to_the_host_ceiling_and_dev_shm_is_small(runner, monkeypatch):
    """Issue 26: a spec asking for more memory than the host has runs under the ceiling (here lowered by
    ``COMPARNA_MEMORY_CEILING_MB``): 200 MB of files in /tmp (tmpfs: memory) are stopped by the engine's
    memory cgroup; /dev/shm holds at most 16 MB. One run per host here: since e7101ed (issue 36) a run gets
    at most the ceiling divided by ``COMPARNA_PREDICT_CONCURRENCY`` (64 MB of 128 with the default 2)."""
    monkeypatch.setenv("COMPARNA_PREDICT_CONCURRENCY", "1")
    monkeypatch.setenv("COMPARNA_MEMORY_CEILING_MB", "128")
    fill_tmp = (
        "for k in range(25):\n    open('/tmp/f%d' % k, 'wb').write(b'x' * 8 * 2**20)\nprint('(((...)))')"
    )
    spec = py(fill_tmp, memory_limit_mb=65536, time_limit_s=30)
    result = run_prediction(spec, "GGGAAACCC", runner=runner)
    assert result.limits["container_memory_mb"] == 128
    assert result.status == "failed" and "128 MB" in result.message, (result.message, result.stderr_tail)
    monkeypatch.delenv("COMPARNA_MEMORY_CEILING_MB")
    fill_shm = (
        "import sys\nn = 0\ntry:\n    for k in range(12):\n"
        "        open('/dev/shm/f%d' % k, 'wb').write(b'x' * 8 * 2**20)\n        n += 8\n"
        "except OSError as exc:\n    print('stopped', n, exc.strerror, file=sys.stderr)\nprint('(((...)))')"
    )
    result = run_prediction(py(fill_shm, memory_limit_mb=1024, time_limit_s=30), "GGGAAACCC", runner=runner)
    assert result.status == "ok" and "stopped" in result.stderr_tail, (result.message, result.stderr_tail)
    assert int(result.stderr_tail.split("stopped")[1].split()[0]) <= 16
    assert no_containers_left()


def test_a_container_run_holds_its_memory_in_the_hosts_ledger(runner, monkeypatch):
    """Issue 36: a container run reserves its memory limit in the host's budget for as long as it runs (the
    same ledger as the sandboxed runs: ContainerRunner runs through ProcessRunner.run), and frees it after.
    A jobs root (so a ledger) of the test's own: other tests' runs on this machine do not show in it."""
    import os
    import tempfile
    import threading
    import time

    from predictors.core import memory_budget

    root = tempfile.mkdtemp(prefix="comparna-ledger-", dir="/tmp")
    os.chmod(root, 0o711)
    monkeypatch.setenv("COMPARNA_JOBS_DIR", os.path.join(root, "jobs"))

    seen: list[int] = []
    stop = threading.Event()

    def watch():
        while not stop.is_set():
            seen.append(memory_budget.reserved_mb())
            time.sleep(0.05)

    before = memory_budget.reserved_mb()
    thread = threading.Thread(target=watch)
    thread.start()
    try:
        spec = py("import time\ntime.sleep(2)\nprint('(((...)))')", memory_limit_mb=200, time_limit_s=20)
        result = run_prediction(spec, "GGGAAACCC", runner=runner)
    finally:
        stop.set()
        thread.join()
    assert result.status == "ok", (result.message, result.stderr_tail)
    held = result.limits["container_memory_mb"]
    assert held > 0 and max(seen) - before == held
    assert before == 0 and memory_budget.reserved_mb() == 0
    assert no_containers_left()
    subprocess.run(["rm", "-rf", root], check=False)
