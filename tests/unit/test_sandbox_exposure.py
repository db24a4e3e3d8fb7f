"""What a sandboxed program can see and read, attacked through the real bubblewrap sandbox (issue 11).

A registered predictor is hostile: it must not read the database or anything else of the data directory,
the settings or ``.git``; an output file it turns into a link must never make the worker read the link's
target; and the sandbox must work wherever the checkout is (under /tmp, in a path with spaces, run by a
non-root user) and die with the process that started it.
"""

from __future__ import annotations

import ast
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest

from predictors.core.runners import (
    ETC_ENTRIES,
    MESSAGE_MAX_CHARS,
    REPO_ROOT,
    SANDBOX_PACKAGES,
    SANDBOX_UID,
    ExposureError,
    SandboxRunner,
    check_exposable,
    check_reachable,
    run_prediction,
)
from predictors.core.spec import PredictorSpec
from predictors.core.venvs import venvs_dir
from predictors.core.workspace import (
    RUN_DIR_RE,
    _own_cgroup_dirs,
    clean_leftovers,
    data_dir,
    jobs_root,
    process_token,
    token_alive,
)

pytestmark = pytest.mark.skipif(not SandboxRunner.available(), reason="bubblewrap (bwrap) is not installed")

SEQ = "GGGGAAACCCC"
HAIRPIN = "((((...))))"


def spec(*argv: str, **kw) -> PredictorSpec:
    defaults = dict(time_limit_s=10, memory_limit_mb=512)
    defaults.update(kw)
    return PredictorSpec(name="attack", program="attacker", version="0", argv=argv, **defaults)


def all_text(result) -> str:
    return "\n".join((result.message, result.stderr_tail, result.stdout))


# -- what is visible ---------------------------------------------------------------------------------------
def _first_party_imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return {m for m in found if m.split(".")[0] in {"comparna", "predictors", "ingest"}}


def test_wrapper_imports_stay_inside_the_exposed_packages():
    # Transitive closure of first-party imports from every wrapper: each module must be in a folder the
    # sandbox exposes, or the wrapper would fail only when run sandboxed.
    exposed = [tuple(p.removesuffix(".py").split("/")) for p in SANDBOX_PACKAGES]
    todo = [p for p in (REPO_ROOT / "predictors" / "programs").glob("*.py")]
    seen: set[Path] = set()
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        for module in _first_party_imports(path):
            parts = tuple(module.split("."))
            assert any(parts[: len(e)] == e for e in exposed), f"{path.name} imports {module}, not exposed"
            target = REPO_ROOT.joinpath(*parts).with_suffix(".py")
            if not target.exists():
                target = REPO_ROOT.joinpath(*parts, "__init__.py")
            if target.exists():
                todo.append(target)
    assert len(seen) > 5


WALK = (
    "import os, sys\n"
    "envs = sys.argv[1:3]\n"
    "for top in sorted(os.listdir('/')):\n"
    "    path = '/' + top\n"
    "    print(path)\n"
    "    if top in ('proc', 'usr', 'dev', 'sys') or os.path.islink(path):\n"
    "        continue\n"
    "    for root, dirs, files in os.walk(path):\n"
    "        for name in dirs + files:\n"
    "            p = os.path.join(root, name)\n"
    "            # The Python environment and the wrappers: their top only (the listing is capped).\n"
    "            env = next((e for e in envs if p.startswith(e + '/')), None)\n"
    "            if env is not None:\n"
    "                if p[len(env):].count('/') == 1:\n"
    "                    print(p)\n"
    "            elif not p.startswith('/opt/comparna/') or p.count('/') <= 5:\n"
    "                print(p)\n"
)


def test_sandbox_sees_only_the_program_environment_and_its_job():
    venv = os.path.abspath(sys.prefix)
    venvs = str(venvs_dir())
    s = spec(sys.executable, "-c", WALK, venv, venvs, "{fasta}")
    result = run_prediction(s, SEQ, runner=SandboxRunner())
    assert result.status == "unparsable", result  # the listing is no structure; only its content matters
    listing = set(result.stdout.splitlines())
    assert len(result.stdout) < 60_000, "listing truncated"
    assert "/job/input.fa" in listing and "/opt/comparna/predictors/programs" in listing
    assert venv + "/bin" in listing
    # Nothing of the checkout but the virtualenv, nothing of the data directory, no settings, no .git.
    for path in listing:
        assert not path.startswith(str(data_dir())), path
        if path.startswith(str(REPO_ROOT) + "/"):
            assert any(path.startswith(e + "/") or e.startswith(path) for e in (venv, venvs)), path
        assert ".git" not in path.split("/") and "settings.py" not in path and "sqlite3" not in path, path
    tops = {p.split("/")[1] for p in listing}
    allowed = {"bin", "sbin", "lib", "lib32", "lib64", "libx32", "dev", "etc", "job", "opt", "proc", "tmp"}
    allowed |= {"usr"}
    assert tops <= allowed | {venv.split("/")[1], venvs.split("/")[1]}, tops
    etc = {p.split("/")[2] for p in listing if p.startswith("/etc/")}
    assert etc <= {*ETC_ENTRIES, "passwd", "group"} and "shadow" not in etc, etc
    exposed = {p for p in listing if p.startswith("/opt/comparna/")}
    for pkg in SANDBOX_PACKAGES:
        assert f"/opt/comparna/{pkg}" in exposed, pkg
    # Only those (and the folders leading to them): no settings, no other module of the checkout.
    leading = {f"/opt/comparna/{'/'.join(pkg.split('/')[:k])}" for pkg in SANDBOX_PACKAGES for k in (1, 2)}
    inside = [p for p in exposed if not any(p.startswith(f"/opt/comparna/{pkg}") for pkg in SANDBOX_PACKAGES)]
    assert set(inside) <= leading, set(inside) - leading


def test_database_data_dir_and_git_are_unreadable():
    # The attack of the issue: a command reading the SQLite database (and its neighbours) of the data dir.
    secret = f"sentinel-{uuid.uuid4().hex}"
    sentinel = data_dir() / f"i11-{uuid.uuid4().hex}.sqlite3"
    data_dir().mkdir(parents=True, exist_ok=True)
    sentinel.write_text("SQLite format 3\0" + secret)
    try:
        paths = [
            sentinel,
            data_dir() / "comparna.sqlite3",
            REPO_ROOT / "comparna" / "settings.py",
            REPO_ROOT / ".git" / "HEAD",
            REPO_ROOT / ".git",
        ]
        code = (
            "import sys\n"
            f"for p in {[str(p) for p in paths]!r}:\n"
            "    try:\n"
            "        sys.stdout.write(open(p, errors='replace').read())\n"
            "    except OSError as e:\n"
            "        print(p, type(e).__name__, file=sys.stderr)\n"
        )
        result = run_prediction(spec(sys.executable, "-c", code, "{fasta}"), SEQ, runner=SandboxRunner())
    finally:
        sentinel.unlink()
    text = all_text(result)
    assert secret not in text and "SQLite format 3" not in text and "SECRET_KEY" not in text
    assert text.count("FileNotFoundError") == len(paths), result.stderr_tail


def test_exposing_the_checkout_or_the_data_dir_is_refused(tmp_path):
    for bad in (REPO_ROOT, REPO_ROOT / ".git", data_dir(), Path("/"), REPO_ROOT.parent):
        with pytest.raises(ExposureError):
            check_exposable(bad)
    result = run_prediction(
        spec("/bin/echo", HAIRPIN, "{sequence}"), SEQ, runner=SandboxRunner(extra_ro_binds=(str(REPO_ROOT),))
    )
    assert result.status == "infrastructure_error" and "refusing to expose" in result.message


# -- outputs that are links -------------------------------------------------------------------------------
@pytest.fixture
def root_only_secret(tmp_path):
    secret = f"root-only-{uuid.uuid4().hex}"
    path = tmp_path / "secret.txt"
    path.write_text(HAIRPIN + "\n" + secret + "\n")
    path.chmod(0o600)
    return path, secret


@pytest.mark.parametrize("target", ["/proc/self/environ", "/etc/shadow", "root-only"])
def test_symlinked_output_file_is_never_followed(target, root_only_secret, monkeypatch):
    path, secret = root_only_secret
    env_secret = f"env-secret-{uuid.uuid4().hex}"
    monkeypatch.setenv("DJANGO_SECRET_KEY", env_secret)  # what /proc/self/environ of the worker would show
    link_to = str(path) if target == "root-only" else target
    s = spec("/bin/sh", "-c", 'ln -s "$0" out.db', link_to, "{fasta}", output_file="out.db")
    result = run_prediction(s, SEQ, runner=SandboxRunner())
    assert result.status == "unparsable", result
    assert "was not read: it is a symbolic link" in result.message
    text = all_text(result)
    assert secret not in text and env_secret not in text and "root:" not in text


def test_symlinked_directory_fifo_and_oversized_outputs_are_refused(root_only_secret):
    path, secret = root_only_secret
    cases = {
        # A link in a directory component of the output path.
        f"ln -s {path.parent} d": ("d/secret.txt", "not a plain directory"),
        # A FIFO would block a reader forever.
        "mkfifo out.db": ("out.db", "not a regular file"),
    }
    for command, (output_file, reason) in cases.items():
        s = spec("/bin/sh", "-c", command + "; : {fasta}", output_file=output_file)
        start = time.monotonic()
        result = run_prediction(s, SEQ, runner=SandboxRunner())
        assert time.monotonic() - start < 5
        assert result.status == "unparsable" and reason in result.message, result
        assert secret not in all_text(result)


def test_parse_errors_quote_bounded_output():
    code = "import sys\nsys.stdout.write('x' * 200000)\n"
    result = run_prediction(spec(sys.executable, "-c", code, "{fasta}"), SEQ, runner=SandboxRunner())
    assert result.status == "unparsable" and len(result.message) <= MESSAGE_MAX_CHARS


# -- any checkout, any user -------------------------------------------------------------------------------
def _copy_checkout(dest: Path) -> None:
    ignore = shutil.ignore_patterns(".venv", ".venvs", ".git", "var", "staticfiles", "__pycache__", "*.pyc")
    shutil.copytree(REPO_ROOT, dest, ignore=ignore)


RUN_IN_COPY = (
    "import json, sys\n"
    "from predictors.catalogue import get_spec\n"
    "from predictors.core.runners import REPO_ROOT, SandboxRunner, run_prediction\n"
    "r = run_prediction(get_spec('RNAfold-MFE'), 'GGGGAAACCCCAUUUGGGGAAACCCC', runner=SandboxRunner())\n"
    "print(json.dumps({'repo': str(REPO_ROOT), 'status': r.status, 'message': r.message,\n"
    "                  'stderr': r.stderr_tail, 'uid': r.limits.get('uid')}))\n"
)


@pytest.mark.slow
def test_checkout_under_tmp_with_spaces_as_root_and_as_a_plain_user(tmp_path):
    import json

    # 0700, as `mktemp -d` makes it: the sandbox uid cannot traverse it (a root worker stages the binds).
    base = Path(tempfile.mkdtemp(prefix="comparna clone ", dir="/tmp"))
    try:
        repo = base / "with space" / "main"
        _copy_checkout(repo)
        users = [None]
        plain = 64990
        try:  # the plain user runs this test's interpreter: only where it can reach it
            check_reachable(Path(sys.executable).parent, plain, plain)
        except ExposureError:
            pass
        else:
            if os.getuid() == 0 and shutil.which("setpriv"):
                users.append(plain)  # bubblewrap then uses an unprivileged user namespace
        for user in users:
            env = {"PATH": os.environ["PATH"], "COMPARNA_DATA_DIR": str(base / f"data-{user}")}
            cmd = [sys.executable, "-c", RUN_IN_COPY]
            if user is not None:
                # A plain user's own checkout (0700 and theirs, like root's was).
                cmd = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups", *cmd]
                env["COMPARNA_JOBS_DIR"] = str(base / "jobs-plain")
                env["HOME"] = str(base)
                for path in [base, *base.rglob("*")]:
                    os.chown(path, user, user, follow_symlinks=False)
            out = subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True, timeout=120)
            assert out.returncode == 0, out.stderr
            got = json.loads(out.stdout.splitlines()[-1])
            assert got["repo"] == str(repo)
            assert got["status"] == "ok", got
            assert got["uid"] == (SANDBOX_UID if user is None else user)
    finally:
        shutil.rmtree(base, ignore_errors=True)


# -- the sandbox dies with its parent; what a dead worker left is cleaned ---------------------------------
PARENT = (
    "import sys\n"
    "from predictors.core.runners import SandboxRunner, run_prediction\n"
    "from predictors.core.spec import PredictorSpec\n"
    "code = sys.argv[1]\n"
    "s = PredictorSpec(name='x', program='x', version='0', argv=('{python}', '-c', code, '{fasta}'),\n"
    "                  time_limit_s=600)\n"
    "run_prediction(s, 'GGGAAACCC', runner=SandboxRunner())\n"
)


def _processes_with(marker: str) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if marker.encode() in (d / "cmdline").read_bytes():
                    out.append(int(d.name))
            except OSError:
                pass
    return out


def test_sandbox_dies_with_its_parent_and_its_leftovers_are_removed():
    marker = f"marker{uuid.uuid4().hex}"
    # The program leaves a daemon behind (double fork + setsid) and sleeps.
    code = (
        f"import os, time  # {marker}\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        "        time.sleep(600)\n"
        "    os._exit(0)\n"
        "time.sleep(600)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", PARENT, code], cwd=REPO_ROOT, env={**os.environ})
    try:
        deadline = time.monotonic() + 30
        while len(_processes_with(marker)) < 5 and time.monotonic() < deadline:
            time.sleep(0.1)
        sandboxed = _processes_with(marker)
        token = process_token(parent.pid)
        run_dirs = [d for d in jobs_root().iterdir() if RUN_DIR_RE.match(d.name) and token in d.name]
        assert len(sandboxed) >= 5 and len(run_dirs) == 1, (sandboxed, run_dirs)
        cgroups = [d for root in _own_cgroup_dirs() for d in root.glob(f"comparna-{token}-*")]
        if Path("/sys/fs/cgroup/pids/cgroup.procs").exists():  # cgroup v1 pids hierarchy, as here
            assert cgroups, "the run made no cgroup on a host with a writable pids hierarchy"
        parent.kill()  # SIGKILL: no cleanup of its own
        parent.wait()
        deadline = time.monotonic() + 5
        while _processes_with(marker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _processes_with(marker) == []
        assert token_alive(token) is False and run_dirs[0].exists()
        assert all(d.exists() for d in cgroups)  # left behind (where this host lets us make cgroups)
        removed = clean_leftovers()
        assert not run_dirs[0].exists() and removed["run_dirs"] >= 1
        assert not any(d.exists() for d in cgroups) and removed["cgroups"] >= len(cgroups)
    finally:
        if parent.poll() is None:
            parent.send_signal(signal.SIGKILL)
            parent.wait()
        for pid in _processes_with(marker):
            os.kill(pid, signal.SIGKILL)


def test_live_processes_keep_their_run_dirs():
    token = process_token()
    assert token_alive(token) is True
    assert token_alive(process_token(os.getppid())) is True
    assert token_alive("00000000.1.1.1") is None  # another boot: cannot tell
    dead = subprocess.Popen(["/bin/true"])
    dead_token = process_token(dead.pid)
    dead.wait()
    assert token_alive(dead_token) is False


WORKER = """
from predictors.core.runners import SandboxRunner, run_prediction
from predictors.core.spec import PredictorSpec
ok = PredictorSpec(name="x", program="x", version="0", argv=("/bin/echo", "((((...))))", "{sequence}"))
slow = PredictorSpec(name="y", program="y", version="0", argv=("/bin/sh", "-c", "sleep 30; : {sequence}"),
                     time_limit_s=0.5)
print([run_prediction(s, "GGGGAAACCCC", runner=SandboxRunner()).status for s in (ok, ok, ok, slow, slow)])
"""
# Stands in for the host's init: orphans of the worker's descendants come to it; it never reaps them.
REAPER = """
import ctypes, os, subprocess, sys
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)
worker = subprocess.run([sys.executable, "-c", sys.argv[1]], capture_output=True, text=True)
children = [p for p in os.listdir("/proc") if p.isdigit()
            and open(f"/proc/{p}/stat").read().rsplit(") ", 1)[1].split()[1] == str(os.getpid())]
print(worker.stdout.strip(), worker.stderr[-2000:], children)
"""


def test_every_sandbox_process_is_reaped_by_the_runner():
    # bubblewrap's monitor can exit before its namespace init; the runner must reap that init itself
    # (a host whose init does not reap would collect one zombie per run).
    out = subprocess.run(
        [sys.executable, "-c", REAPER, WORKER], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "['ok', 'ok', 'ok', 'timeout', 'timeout']  []", out.stdout
