"""Issue 26, the execution side, through the real runners: the bubblewrap sandbox and the web-service runner
against a real HTTP server on loopback.

A hostile program or service tries to break the disk (a directory tree too deep to remove, 600 MB in its job
dir, /dev/shm), the memory ceiling (a limit above the host's memory), the parsers (a 5000-digit integer, NaN,
deep nesting) and the SSRF guard (IPv6 forms that carry a loopback or private IPv4 address). Each attempt
must end in a final recorded outcome with a clear message, and leave nothing behind.
"""

from __future__ import annotations

import ipaddress
import os
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from predictors.core.netguard import Guard, parse_networks
from predictors.core.runners import SandboxRunner, run_prediction
from predictors.core.spec import PredictorSpec
from predictors.core.webservice import WebServiceRunner
from predictors.core.workspace import RunDir, jobs_root, process_token

SEQ = "GGGGAAACCCC"
HAIRPIN = "((((...))))"
needs_bwrap = pytest.mark.skipif(not SandboxRunner.available(), reason="bubblewrap (bwrap) is not installed")
# The job-dir tmpfs is mounted by a root worker (the deployment's: the program runs as the sandbox uid).
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="the job-dir quota is a tmpfs a root worker mounts")


def spec(*argv: str, **kw) -> PredictorSpec:
    defaults = dict(time_limit_s=20, memory_limit_mb=1024)
    defaults.update(kw)
    return PredictorSpec(name="hostile", program="hostile", version="0", argv=argv, **defaults)


def py(code: str, **kw) -> PredictorSpec:
    # Braces in the code would be argv placeholders: the programs build them with chr().
    return spec("{python}", "-c", code, "{fasta}", **kw)


def my_run_dirs() -> set[Path]:
    return {d for d in jobs_root().iterdir() if process_token() in d.name}


# -- 1. cleanup of a deep directory tree -------------------------------------------------------------------
DEEP_TREE = (
    "import os\n"
    "for k in range(1500):\n"
    "    os.mkdir('d')\n"
    "    os.chdir('d')\n"
    "print('((((...))))')\n"
)


@needs_bwrap
def test_a_run_that_leaves_1500_nested_directories_ends_recorded_and_leaves_nothing():
    before = my_run_dirs()
    result = run_prediction(py(DEEP_TREE), SEQ, runner=SandboxRunner())
    assert result.status == "ok", result
    assert my_run_dirs() == before  # the run dir, deep tree and all, is gone


def test_remove_tree_removes_what_rmtree_cannot(tmp_path):
    """Deeper than the recursion limit, a path beyond PATH_MAX, an unreadable directory, a symlink out."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("kept")
    root = tmp_path / "run"
    root.mkdir()
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for k in range(3000):
            name = "n" * 200 if k % 2 else "d"
            os.mkdir(name, dir_fd=fd)
            if k == 10:
                os.symlink(str(outside), "link", dir_fd=fd)
                os.close(os.open("file", os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=fd))
            nfd = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = nfd
        os.close(os.open("leaf", os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=fd))
    finally:
        os.close(fd)
    os.chmod(root / "d", 0o000)  # a worker that is not root must open it up to enter it
    try:
        assert RunDir(root).remove() is True
        assert not root.exists()
        assert (outside / "keep").read_text() == "kept"  # the symlink was removed, not followed
    finally:  # whatever happened: pytest's own clean-up of tmp_path would choke on this tree
        subprocess.run(["rm", "-rf", "--", str(root)], check=False, timeout=120)


def test_remove_tree_never_raises():
    assert RunDir(Path("/nonexistent/comparna-test")).remove() is True
    assert RunDir(Path("/proc/self/fd")).remove() is False  # cannot be removed: logged, not raised


# -- 2. the job dir's total size and /dev/shm -------------------------------------------------------------
QUOTA_BOMB = (
    "import sys\n"
    "written = 0\n"
    "chunk = b'x' * (15 * 2**20)\n"
    "try:\n"
    "    for k in range(40):\n"
    "        with open('f%d' % k, 'wb') as f:\n"
    "            f.write(chunk)\n"
    "        written += len(chunk)\n"
    "except OSError as exc:\n"
    "    print('stopped after', written // 2**20, 'MB:', exc.strerror, file=sys.stderr)\n"
    "    sys.exit(1)\n"
    "print('((((...))))')\n"
)


@needs_bwrap
@needs_root
def test_forty_files_of_15_mb_in_the_job_dir_fail_with_disk_quota_exceeded():
    before = my_run_dirs()
    result = run_prediction(py(QUOTA_BOMB), SEQ, runner=SandboxRunner())
    assert result.status == "failed", result
    assert result.message.startswith("disk quota exceeded"), result.message
    assert result.limits["job_dir_mb"] == 256
    assert "No space left on device" in result.stderr_tail, result.stderr_tail
    stopped = int(result.stderr_tail.split("stopped after")[1].split()[0])
    assert stopped <= 256
    assert my_run_dirs() == before


SHM_AND_DEV = (  # 100 MB into /dev/shm in files of 8 MB (under RLIMIT_FSIZE), then a file in /dev itself
    "import sys\n"
    "n = 0\n"
    "try:\n"
    "    for k in range(100):\n"
    "        with open('/dev/shm/fill%d' % (k // 8), 'ab', buffering=0) as f:\n"
    "            f.write(b'x' * 2**20)\n"
    "        n += 1\n"
    "    print('shm wrote', n, file=sys.stderr)\n"
    "except OSError as exc:\n"
    "    print('shm stopped', n, exc.strerror, file=sys.stderr)\n"
    "try:\n"
    "    open('/dev/comparna-test', 'wb').write(b'x' * 2**20)\n"
    "    print('dev wrote', file=sys.stderr)\n"
    "except OSError as exc:\n"
    "    print('dev refused', exc.strerror, file=sys.stderr)\n"
    "open('/dev/null', 'wb').write(b'still works')\n"
    "print('((((...))))')\n"
)


@needs_bwrap
def test_dev_shm_is_a_small_tmpfs_and_dev_is_not_writable():
    result = run_prediction(py(SHM_AND_DEV), SEQ, runner=SandboxRunner())
    assert result.status == "ok", result
    assert "shm stopped" in result.stderr_tail, result.stderr_tail
    written = int(result.stderr_tail.split("shm stopped")[1].split()[0])
    assert written <= 16
    assert "dev refused" in result.stderr_tail and "dev wrote" not in result.stderr_tail
    assert result.limits["dev_shm_mb"] == 16


# -- 3. the memory ceiling ----------------------------------------------------------------------------------
def test_memory_ceiling_is_below_the_hosts_memory():
    from predictors.core.limits import host_memory_mb, memory_ceiling_mb, memory_limit_problem

    total = int(Path("/proc/meminfo").read_text().split("MemTotal:")[1].split()[0]) // 1024
    ceiling = memory_ceiling_mb()
    assert ceiling is not None and ceiling < total and ceiling <= host_memory_mb()
    assert memory_limit_problem(65536 if total > 65536 * 2 else total) is not None  # the 64 GiB too
    assert memory_limit_problem(512) is None


TMP_FILLER = (  # 200 MB of files in /tmp (a tmpfs: memory, not address space), 8 MB each (RLIMIT_FSIZE)
    "for k in range(25):\n"
    "    with open('/tmp/fill%d' % k, 'wb') as f:\n"
    "        f.write(b'x' * 8 * 2**20)\n"
    "print('((((...))))')\n"
)


@needs_bwrap
def test_a_spec_above_the_ceiling_runs_clamped_by_its_memory_cgroup(monkeypatch):
    from predictors.core.limits import run_share_mb

    huge = py("print('((((...))))')", memory_limit_mb=65536)
    result = run_prediction(huge, SEQ, runner=SandboxRunner())
    assert result.status == "ok", result
    # clamped to a run's share of the host's ceiling (issue 36: the runs side by side share it)
    assert result.limits["memory_mb"] == result.limits["address_space_mb"] == run_share_mb() < 65536
    # A deployment's lower ceiling: 200 MB of tmpfs in /tmp (not address space) is stopped by the cgroup.
    monkeypatch.setenv("COMPARNA_PREDICT_CONCURRENCY", "1")
    monkeypatch.setenv("COMPARNA_MEMORY_CEILING_MB", "128")
    result = run_prediction(py(TMP_FILLER, memory_limit_mb=65536), SEQ, runner=SandboxRunner())
    if result.limits["cgroup_memory_mb"] is None:
        pytest.skip("no writable memory cgroup on this host")
    assert result.limits["cgroup_memory_mb"] == 128
    assert result.status == "failed" and "memory limit of 128 MB exceeded" in result.message, result


# -- 4. output that never parses --------------------------------------------------------------------------
HUGE = "9" * 5000
HOSTILE_OUTPUTS = {
    "5000-digit": '{"pairs": [[1, ' + HUGE + "]]}",
    "20-digit": '{"pairs": [[1, 11]], "probabilities": [[1, 11, ' + "9" * 20 + "]]}",
    "nan": '{"pairs": [[1, 11]], "probabilities": [[1, 11, NaN]]}',
    "overflow": '{"pairs": [[1, 1e999]]}',
    "deep": '{"pairs": ' + "[" * 100000 + "]" * 100000 + "}",
    "wrong-type": '{"pairs": [[1, "11"]], "length": {"a": [1]}}',
    "huge-length": '{"pairs": [], "length": ' + HUGE + "}",
    "out-of-range": '{"pairs": [[1, 12345678901234]]}',
}


@needs_bwrap
def test_a_5000_digit_integer_from_a_command_is_unparsable(tmp_path):
    code = (
        "import sys\n"
        "o, c = chr(123), chr(125)\n"
        "sys.stdout.write(o + '\"pairs\": [[1, ' + '9' * 5000 + ']]' + c)\n"
    )
    result = run_prediction(py(code, output_format="pairs-json"), SEQ, runner=SandboxRunner())
    assert result.status == "unparsable", result
    assert "5000 digits" in result.message


class _Hostile(BaseHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        body = HOSTILE_OUTPUTS[self.path.strip("/")].encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture(scope="module")
def hostile_service():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hostile)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def web(endpoint: str, **kw) -> PredictorSpec:
    return PredictorSpec(
        name="Hostile", program="hostile", version="1", argv=(), kind="web", endpoint=endpoint,
        output_format="pairs-json", time_limit_s=10, retries=0, **kw,
    )


@pytest.mark.parametrize("case", sorted(HOSTILE_OUTPUTS))
def test_a_web_service_answering_unparsable_numbers_is_unparsable(hostile_service, case):
    runner = WebServiceRunner(allowed_networks=parse_networks("127.0.0.0/8"), backoff_s=0.01)
    result = run_prediction(web(f"{hostile_service}/{case}"), SEQ, runner=runner)
    assert result.status == "unparsable", (case, result)
    assert result.message.startswith("unparsable answer:") and len(result.message) < 1000, result.message


# -- 5. SSRF: IPv6 forms that carry an IPv4 address ---------------------------------------------------------
CARRIERS = [
    "::127.0.0.1",  # IPv4-compatible
    "::10.0.0.1",
    "64:ff9b::7f00:1",  # NAT64 well-known prefix
    "64:ff9b::a00:1",
    "64:ff9b:1::a00:1",  # NAT64 local-use prefix
    "::ffff:0:a00:1",  # IPv4-translated
    "::ffff:0:7f00:1",
    "::ffff:127.0.0.1",  # IPv4-mapped
    "2002:7f00:1::1",  # 6to4 of 127.0.0.1
    "2002:a00:1::1",  # 6to4 of 10.0.0.1
    "2001:0:4136:e378:8000:63bf:80ff:fffe",  # Teredo, client 127.0.0.1
    "2001:0:4136:e378:8000:63bf:f5ff:fffe",  # Teredo, client 10.0.0.1
    "2001:0:a00:1:8000:63bf:3fff:fdd2",  # Teredo, server 10.0.0.1
]


@pytest.mark.parametrize("address", CARRIERS)
def test_ipv6_forms_carrying_a_private_ipv4_address_are_refused(address):
    assert not Guard(()).address_allowed(ipaddress.ip_address(address))
    runner = WebServiceRunner(allowed_networks=(), backoff_s=0.01)
    result = run_prediction(web(f"https://[{address}]:8443/fold"), SEQ, runner=runner)
    assert result.status == "failed" and result.message.startswith("endpoint refused"), result.message
    assert result.resources["attempts"] == 1


def test_plainly_global_addresses_stay_allowed():
    guard = Guard(())
    for address in ("8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "2a00:1450:4001:82a::200e"):
        assert guard.address_allowed(ipaddress.ip_address(address)), address
