"""Sign-in lockout across two web processes (issue 36): gunicorn with two workers on loopback (PostgreSQL, no
shared cache: each process has its own local-memory cache), failures sent in concurrent pairs so that both
processes count them. The lock holds for the right password, for the fullwidth spelling of the name, and for
every client address behind the trusted proxy (read from X-Forwarded-For), while another address signs in.

Before the fix each process counted in its own cache: three failures each, under the limit of five, and the
right password signed in; the fullwidth name had a lock key of its own.
"""

from __future__ import annotations

import re
import threading
from pathlib import Path

import pytest
import requests

from tests.e2e.stack import production_stack

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(300)]
PASSWORD = "a long passphrase 42"
LOCKED = "Too many failed sign-ins"


def web_processes(master: int) -> list[int]:
    """The gunicorn master's worker processes."""
    children = Path(f"/proc/{master}/task/{master}/children").read_text().split()
    return [int(c) for c in children]


def attempt(base: str, username: str, password: str, *, client: str) -> requests.Response:
    """One sign-in on fresh connections (either web process may take it), as ``client`` behind the proxy."""
    with requests.Session() as s:
        s.headers["Connection"] = "close"
        page = s.get(base + "/account/login/", timeout=60)
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
        return s.post(
            base + "/account/login/",
            data={"username": username, "password": password, "csrfmiddlewaretoken": token},
            headers={"Referer": base + "/account/login/", "X-Forwarded-For": client},
            allow_redirects=False,
            timeout=60,
        )


def in_pairs(base: str, tries: list[tuple[str, str]], *, client: str) -> list[requests.Response]:
    """The tries two at a time, each pair at once: a sync gunicorn worker busy with one (hashing the
    password) leaves the other to the second process."""
    answers: list[requests.Response] = []
    for k in range(0, len(tries), 2):
        pair = tries[k : k + 2]
        results: list = [None] * len(pair)
        barrier = threading.Barrier(len(pair))

        def run(i: int, username: str, password: str, results=results, barrier=barrier) -> None:
            barrier.wait()
            results[i] = attempt(base, username, password, client=client)

        threads = [threading.Thread(target=run, args=(i, *t)) for i, t in enumerate(pair)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        answers += results
    return answers


def test_lockouts_hold_across_two_web_processes_and_every_spelling_of_the_name():
    env = {
        "COMPARNA_LOGIN_FAILURES_PER_ACCOUNT": "5",
        "COMPARNA_LOGIN_FAILURES_PER_ADDRESS": "8",
        "COMPARNA_LOGIN_LOCKOUT_S": "600",
        "COMPARNA_TRUSTED_PROXIES": "127.0.0.1",
    }
    with production_stack(env) as stack:
        stack.manage(
            "shell",
            "-c",
            "from django.contrib.auth.models import User; "
            f"[User.objects.create_user(n, n + '@x.org', {PASSWORD!r}) for n in ('bob', 'carol', 'dave')]",
        )
        base = stack.start_web()
        master = stack.services["gunicorn"].proc.pid
        assert len(web_processes(master)) == 2

        # six failures for bob from six addresses (none reaches the address limit), three per process at most
        answers = [
            a
            for k in range(3)
            for a in in_pairs(base, [("bob", "guess a"), ("bob", "guess b")], client=f"198.51.100.{k}")
        ]
        assert all(a.status_code == 200 and LOCKED not in a.text for a in answers[:5])
        for client in ("203.0.113.1", "203.0.113.2"):  # the right password, either process, any address
            for a in in_pairs(base, [("bob", PASSWORD), ("ｂｏｂ", PASSWORD)], client=client):
                assert a.status_code == 200 and LOCKED in a.text, a.status_code
        for spelling in ("BOB", " bob", "ＢＯＢ"):
            assert LOCKED in attempt(base, spelling, PASSWORD, client="203.0.113.3").text
        assert attempt(base, "carol", PASSWORD, client="203.0.113.4").status_code == 302  # others sign in

        # eight failures from one address against made-up accounts: every account is locked from there only
        in_pairs(base, [(f"nobody{k}", "guess") for k in range(8)], client="192.0.2.66")
        for a in in_pairs(base, [("dave", PASSWORD), ("carol", PASSWORD)], client="192.0.2.66"):
            assert a.status_code == 200 and LOCKED in a.text
        assert attempt(base, "dave", PASSWORD, client="192.0.2.67").status_code == 302
