"""Runners through real subprocesses: outcomes, recorded limits, and abuse of the real bubblewrap sandbox.

Each abusive "predictor" is a tiny Python or shell program. The sandbox must turn it into the right
recorded state, contain it, and leave the machine (this test process, other processes, the file system)
untouched.
"""

from __future__ import annotations

import os
import resource
import select
import shutil
import socket
import tempfile
import time
import uuid
from pathlib import Path

import pytest

from predictors.core.runners import (
    REPO_ROOT,
    SANDBOX_UID,
    STATUSES,
    LocalRunner,
    SandboxRunner,
    run_prediction,
    select_runner,
)
from predictors.core.spec import InvalidSpec, PredictorSpec

pytestmark = pytest.mark.skipif(not SandboxRunner.available(), reason="bubblewrap (bwrap) is not installed")

SEQ = "GGGGAAACCCC"
HAIRPIN = "((((...))))"


def spec(*argv: str, **kw) -> PredictorSpec:
    defaults = dict(time_limit_s=2, memory_limit_mb=512)
    defaults.update(kw)
    return PredictorSpec(name="abuse", program="test program", version="0", argv=argv, **defaults)


def py(code: str, **kw) -> PredictorSpec:
    # Braces in the code would be placeholders; the programs below avoid them.
    return spec("{python}", "-c", code, "{fasta}", **kw)


FORK_BOMB = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass"


def marked(code: str) -> tuple[str, str]:
    """``code`` with a unique marker comment: its processes can be told apart from other runs' (other
    tests or checkouts on the same machine run sandboxes as the same uid at the same time)."""
    marker = f"marker{uuid.uuid4().hex}"
    return f"# {marker}\n{code}", marker


def sandbox_processes(marker: str) -> list[int]:
    """Live (non-zombie) processes of the sandbox uid whose command line holds ``marker``."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            status = (d / "status").read_text()
            cmdline = (d / "cmdline").read_bytes()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if (
            fields.get("Uid", "").split()[:1] == [str(SANDBOX_UID) if os.getuid() == 0 else str(os.getuid())]
            and not fields["State"].strip().startswith("Z")
            and marker.encode() in cmdline
        ):
            out.append(int(d.name))
    return out


@pytest.fixture(scope="module")
def sandbox() -> SandboxRunner:
    return SandboxRunner()


# -- ordinary outcomes ------------------------------------------------------------------------------------
def test_ok_run_records_runner_limits_and_structure(sandbox):
    result = run_prediction(spec("/bin/echo", HAIRPIN, "{sequence}"), SEQ, runner=sandbox)
    assert result.status == "ok", result
    assert result.structure is not None and set(result.structure.pairs) == {(1, 11), (2, 10), (3, 9), (4, 8)}
    assert result.runner == "sandbox-bwrap" and result.runtime_s > 0
    assert result.limits["wall_s"] == 2 and result.limits["network"] == "none"
    assert result.limits["address_space_mb"] == 512 and result.limits["max_length"] == 1000
    assert result.exit_code == 0 and result.fingerprint


def test_program_sees_its_input_in_the_work_dir(sandbox):
    # The FASTA placeholder points at the input file written by run_prediction.
    s = spec("/bin/sh", "-c", "tail -n 1 $0 | tr GAC '(.)'", "{fasta}")
    result = run_prediction(s, "GGAAACC", runner=sandbox)
    assert result.status == "ok", result
    assert set(result.structure.pairs) == {(1, 7), (2, 6)}


def test_output_file_in_work_dir(sandbox):
    s = spec(
        "/bin/sh", "-c", f"echo '{HAIRPIN}' > out.db; echo {{sequence}} > /dev/null", output_file="out.db"
    )
    assert run_prediction(s, SEQ, runner=sandbox).status == "ok"
    missing = spec("/bin/echo", "{sequence}", output_file="never.db")
    result = run_prediction(missing, SEQ, runner=sandbox)
    assert result.status == "unparsable" and "never.db" in result.message


def test_nonzero_exit_is_failed_with_stderr_tail(sandbox):
    s = spec(
        "/bin/sh",
        "-c",
        "echo 'x' >&2; head -c 10000 /dev/zero | tr '\\0' e >&2; echo boom >&2; exit 3; {sequence}",
    )
    result = run_prediction(s, SEQ, runner=sandbox)
    assert result.status == "failed" and result.exit_code == 3 and result.message == "exit status 3"
    assert result.stderr_tail.endswith("boom\n") and 4000 <= len(result.stderr_tail) <= 4096


def test_too_long_is_recorded_and_not_run(sandbox, tmp_path):
    marker = tmp_path / "ran"
    s = spec("/bin/touch", str(marker), "{sequence}", max_length=5)
    result = run_prediction(s, SEQ, runner=sandbox)
    assert result.status == "too_long" and "11 exceeds the limit of 5" in result.message
    assert not marker.exists() and result.runtime_s == 0


def test_invalid_spec_and_bad_sequence_raise(sandbox):
    with pytest.raises(InvalidSpec):
        run_prediction(spec("/bin/echo", "{nope}"), SEQ, runner=sandbox)
    with pytest.raises(ValueError, match="only letters"):
        run_prediction(spec("/bin/echo", "{sequence}"), "GG-A;rm", runner=sandbox)


def test_missing_bubblewrap_is_an_infrastructure_error(sandbox, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    result = run_prediction(spec("/bin/echo", HAIRPIN, "{sequence}"), SEQ, runner=sandbox)
    assert result.status == "infrastructure_error" and "bwrap" in result.message


def test_statuses_and_runner_selection():
    assert STATUSES == (
        "ok", "failed", "timeout", "too_long", "unparsable", "infrastructure_error", "awaiting"
    )
    assert isinstance(select_runner(spec("/bin/echo", "{sequence}")), SandboxRunner)


def test_local_runner_is_labelled_unsandboxed():
    result = run_prediction(spec("/bin/echo", HAIRPIN, "{sequence}"), SEQ, runner=LocalRunner())
    assert result.status == "ok" and result.runner == "local-unsandboxed"
    assert result.limits["network"] == "host"


# -- abuse ------------------------------------------------------------------------------------------------
def test_infinite_loop_times_out(sandbox):
    code, marker = marked("while True: pass")
    start = time.monotonic()
    result = run_prediction(py(code, time_limit_s=1), SEQ, runner=sandbox)
    assert result.status == "timeout" and "1 s" in result.message
    assert time.monotonic() - start < 4
    assert sandbox_processes(marker) == []


def test_memory_bomb_fails_without_hurting_the_worker(sandbox):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    code = "x = []\nwhile True: x.append(bytearray(50 * 2**20))"
    result = run_prediction(py(code, memory_limit_mb=256), SEQ, runner=sandbox)
    assert result.status == "failed", result
    assert "MemoryError" in result.stderr_tail
    if "peak_memory_mb" in result.resources:
        assert result.resources["peak_memory_mb"] <= 256
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 50 * 1024  # kB


def test_fork_bomb_is_contained(sandbox):
    code, marker = marked(FORK_BOMB)
    result = run_prediction(py(code, time_limit_s=1.5), SEQ, runner=sandbox)
    assert result.status in ("timeout", "failed"), result
    if "peak_processes" in result.resources:
        assert result.resources["peak_processes"] <= sandbox.max_processes
    # Every process of the bomb is gone when the run returns, and the machine can still fork.
    assert sandbox_processes(marker) == []
    assert run_prediction(spec("/bin/echo", HAIRPIN, "{sequence}"), SEQ, runner=sandbox).status == "ok"


def test_fork_bomb_is_contained_without_cgroups():
    # The fallback path: RLIMIT_NPROC for the unprivileged uid plus the pid namespace's teardown.
    runner = SandboxRunner(use_cgroups=False)
    code, marker = marked(FORK_BOMB)
    result = run_prediction(py(code, time_limit_s=1), SEQ, runner=runner)
    assert result.status == "timeout" and result.limits["cgroup_pids_max"] is None
    assert sandbox_processes(marker) == []


@pytest.fixture
def host_server():
    """A real TCP server listening on the host's loopback; a completed connection waits in its backlog."""
    srv = socket.create_server(("127.0.0.1", 0), backlog=4)

    def connected() -> bool:
        return bool(select.select([srv], [], [], 0.2)[0])

    yield srv.getsockname()[1], connected
    srv.close()


def _connect_code(port: int) -> str:
    return (
        "import socket, sys\n"
        f"s = socket.create_connection(('127.0.0.1', {port}), timeout=1)\n"
        f"print('{HAIRPIN}')\n"
    )


def test_network_connection_fails_in_the_sandbox(sandbox, host_server):
    port, connected = host_server
    result = run_prediction(py(_connect_code(port)), SEQ, runner=sandbox)
    assert result.status == "failed" and "Connection refused" in result.stderr_tail
    result = run_prediction(
        py("import socket\nsocket.create_connection(('1.1.1.1', 53), timeout=1)"), SEQ, runner=sandbox
    )
    assert result.status == "failed" and "unreachable" in result.stderr_tail
    assert not connected()


def test_same_connection_succeeds_unsandboxed(host_server):
    # Shows the test above can fail: without the sandbox the program reaches the host server.
    port, connected = host_server
    result = run_prediction(py(_connect_code(port)), SEQ, runner=LocalRunner())
    assert result.status == "ok", result
    assert connected()


def test_writes_outside_the_work_dir_fail(sandbox, tmp_path, request):
    tmp_path.chmod(0o777)  # even a world-writable host directory must stay out of reach
    targets = [
        REPO_ROOT / f".abuse-{uuid.uuid4().hex}",
        tmp_path / "escaped",
        Path("/tmp") / f"comparna-abuse-{uuid.uuid4().hex}",
        Path("/etc") / f"comparna-abuse-{uuid.uuid4().hex}",
    ]
    code = (
        "import sys\n"
        "ok = []\n"
        f"for path in {[str(t) for t in targets]!r}:\n"
        "    try:\n"
        "        open(path, 'w').write('x')\n"
        "        ok.append(path)\n"
        "    except OSError as e:\n"
        "        print(path, e, file=sys.stderr)\n"
        "open('/job/inside', 'w').write('fine')\n"
        f"print('{HAIRPIN}')\n"
    )
    # A caller-provided work dir below directories the sandbox uid cannot traverse (pytest's tmp_path is
    # in a 0700 folder): a root worker stages it (bind mount in a private namespace), others are told why.
    unreachable = run_prediction(py(code), SEQ, runner=sandbox, workdir=tmp_path / "work")
    if os.getuid() == 0:
        assert unreachable.status == "ok", unreachable
        assert (tmp_path / "work" / "inside").read_text() == "fine"
    else:
        assert unreachable.status == "infrastructure_error" and "cannot reach" in unreachable.message
    workdir = Path(tempfile.mkdtemp(prefix="comparna-test-"))
    request.addfinalizer(lambda: shutil.rmtree(workdir, ignore_errors=True))
    result = run_prediction(py(code), SEQ, runner=sandbox, workdir=workdir)
    assert result.status == "ok", result
    for t in targets:
        assert not t.exists(), t
    assert "Read-only file system" in result.stderr_tail
    assert (workdir / "inside").read_text() == "fine"


def test_hundred_megabytes_of_output_are_capped(sandbox):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    code = "import sys\nc = 'x' * 2**20\nfor _ in range(100): sys.stdout.write(c)"
    result = run_prediction(py(code), SEQ, runner=sandbox)
    assert result.status == "failed" and "output exceeded the 16 MB limit" in result.message
    assert len(result.stdout) <= 64 * 1024
    # A C program (no Python to turn EFBIG into an exception) is killed by SIGXFSZ.
    result = run_prediction(
        spec("/usr/bin/head", "-c", str(100 * 2**20), "/dev/zero", "{fasta}"), SEQ, runner=sandbox
    )
    assert result.status == "failed" and result.signal == "SIGXFSZ"
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 40 * 1024  # kB


def test_garbage_output_is_unparsable_with_the_parser_message(sandbox):
    result = run_prediction(spec("/bin/echo", "*** not a structure ***", "{sequence}"), SEQ, runner=sandbox)
    assert result.status == "unparsable"
    assert result.message.startswith("dot-bracket:") and "unexpected character" in result.message
    assert "not a structure" in result.stdout


def test_sandbox_runs_unprivileged_without_capabilities(sandbox):
    result = run_prediction(
        spec(
            "/bin/sh",
            "-c",
            f"grep -E '^(Uid|CapEff)' /proc/self/status >&2; hostname >&2; echo '{HAIRPIN}'; : {{sequence}}",
        ),
        SEQ,
        runner=sandbox,
    )
    assert result.status == "ok"
    assert "CapEff:\t0000000000000000" in result.stderr_tail
    assert "comparna-sandbox" in result.stderr_tail
    if os.getuid() == 0:
        assert f"Uid:\t{SANDBOX_UID}" in result.stderr_tail
