"""Web-service predictors against a real HTTP server on loopback: outcomes, retries, limits and SSRF refusal.

The service folds with ViennaRNA (tests/support/local_predictor_service.py); one that is slow, one that
trickles, one that returns garbage and one that is down each end in the recorded outcome a user expects,
within the spec's time limit, and nothing is ever sent to an address the guard does not allow.
"""

from __future__ import annotations

import ipaddress
import time

import pytest

from predictors.core.netguard import Guard, parse_networks
from predictors.core.runners import run_prediction, select_runner
from predictors.core.spec import PredictorSpec
from predictors.core.webservice import WebRequest, WebServiceRunner
from tests.support.local_predictor_service import PredictorService, dead_url, mfe

TRNA = "GCGGAUUUAGCUCAGUUGGGAGAGCGCCAGACUGAAGAUCUGGAGGUCCUGUGUUCGAUCCACAGAAUUCGCACCA"
LOOPBACK = parse_networks("127.0.0.0/8")


def web(endpoint: str | None, **kw) -> PredictorSpec:
    defaults = dict(time_limit_s=5, retries=2)
    defaults.update(kw)
    return PredictorSpec(
        name="MyServer", program="myserver", version="1", argv=(), kind="web", endpoint=endpoint, **defaults
    )


def runner(**kw) -> WebServiceRunner:
    kw.setdefault("allowed_networks", LOOPBACK)
    kw.setdefault("backoff_s", 0.05)
    return WebServiceRunner(**kw)


@pytest.fixture(scope="module")
def service():
    with PredictorService(slow_s=3.0, flaky_failures=2) as server:
        yield server


def test_structure_in_json_plain_text_or_pairs(service):
    expected = mfe(TRNA)
    for path in ("/fold", "/plain", "/pairs"):
        result = run_prediction(web(service.url + path), TRNA, runner=runner(request=WebRequest(id="p1")))
        assert result.status == "ok", (path, result.message)
        assert result.structure.length == len(TRNA)
        assert sorted(result.structure.pairs) == sorted(
            (i + 1, j + 1) for i, j in _pairs(expected)
        )
        assert result.runner == "web-service" and result.resources["attempts"] == 1
    path, body = service.requests[-1]
    assert body["sequence"] == TRNA and body["id"] == "p1" and body["alignment"] is None


def _pairs(db: str) -> list[tuple[int, int]]:
    stack, out = [], []
    for i, c in enumerate(db):
        if c == "(":
            stack.append(i)
        elif c == ")":
            out.append((stack.pop(), i))
    return out


def test_comparative_web_service_gets_the_alignment(service):
    spec = web(service.url + "/fold", input_kind="alignment", comparative_input="seed")
    sto = "# STOCKHOLM 1.0\nquery GCGGAUUUAG\nother GCGGAUUUAG\n//\n"
    result = run_prediction(spec, "GCGGAUUUAG", runner=runner(), alignment=sto)
    assert result.status == "ok"
    assert service.requests[-1][1]["alignment"] == sto


def test_accepted_job_awaits_its_upload_and_upload_only_methods_never_connect(service):
    before = len(service.requests)
    accepted = run_prediction(web(service.url + "/accept"), TRNA, runner=runner())
    assert accepted.status == "awaiting" and accepted.structure is None
    upload_only = run_prediction(web(None), TRNA, runner=runner())
    assert upload_only.status == "awaiting" and "upload" in upload_only.message
    assert len(service.requests) == before + 1


def test_garbage_wrong_length_and_foreign_id_are_unparsable(service):
    for path, words in (("/garbage", "bracket"), ("/wrong-length", "76"), ("/other-id", "someone-else")):
        result = run_prediction(web(service.url + path), TRNA, runner=runner())
        assert result.status == "unparsable", (path, result.status, result.message)
        assert words in result.message, (path, result.message)


def test_slow_and_trickling_services_time_out_within_the_limit(service):
    for path in ("/slow", "/trickle"):
        t0 = time.monotonic()
        result = run_prediction(web(service.url + path, time_limit_s=1.5), TRNA, runner=runner())
        elapsed = time.monotonic() - t0
        assert result.status == "timeout", (path, result.status, result.message)
        assert elapsed < 1.5 + 1.0, (path, elapsed)


def test_transient_errors_are_retried_with_backoff(service):
    result = run_prediction(web(service.url + "/flaky", retries=3), TRNA, runner=runner())
    assert result.status == "ok" and result.resources["attempts"] == 3
    failed = run_prediction(web(service.url + "/error", retries=1), TRNA, runner=runner())
    assert failed.status == "failed" and "HTTP 500" in failed.message and failed.resources["attempts"] == 2


def test_a_server_that_is_down_is_failed_unreachable_not_retried_forever():
    t0 = time.monotonic()
    result = run_prediction(web(dead_url(), retries=2), TRNA, runner=runner(backoff_s=0.1))
    assert result.status == "failed" and result.message.startswith("unreachable: connection refused")
    assert result.resources["attempts"] == 3 and "3 attempts" in result.message
    assert time.monotonic() - t0 < 3


def test_huge_answers_and_redirects_are_refused(service):
    huge = run_prediction(web(service.url + "/huge"), TRNA, runner=runner(max_response_bytes=2**20))
    assert huge.status == "failed" and "longer than" in huge.message
    redirect = run_prediction(web(service.url + "/redirect"), TRNA, runner=runner())
    assert redirect.status == "failed" and "redirects are not followed" in redirect.message


def test_loopback_and_private_endpoints_are_refused_without_an_allow_list(service, monkeypatch):
    monkeypatch.delenv("COMPARNA_WEBSERVICE_ALLOWED_NETWORKS", raising=False)
    before = len(service.requests)
    port = service.server_address[1]
    for url in (
        f"{service.url}/fold",
        f"http://localhost:{port}/fold",  # a name resolving to loopback
        f"http://[::ffff:127.0.0.1]:{port}/fold",  # IPv4-mapped IPv6
        "http://169.254.169.254/latest/meta-data/",  # cloud metadata
        "http://10.0.0.1/",
    ):
        result = run_prediction(web(url, retries=0), TRNA, runner=WebServiceRunner())
        assert result.status == "failed" and "endpoint refused" in result.message, (url, result.message)
    assert len(service.requests) == before  # nothing was sent
    # select_runner reads the allow-list from the environment (what a deployment sets)
    monkeypatch.setenv("COMPARNA_WEBSERVICE_ALLOWED_NETWORKS", "127.0.0.1/32")
    chosen = select_runner(web(service.url + "/fold"))
    assert isinstance(chosen, WebServiceRunner)
    assert run_prediction(web(service.url + "/fold"), TRNA, runner=chosen).status == "ok"


def test_guard_classifies_addresses():
    guard = Guard(parse_networks("192.168.7.0/24"))
    allowed = ["8.8.8.8", "2606:4700:4700::1111", "192.168.7.9"]
    refused = ["127.0.0.1", "::1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "100.64.0.1",
               "0.0.0.0", "::ffff:10.0.0.1", "fd00::1", "fe80::1", "224.0.0.1", "240.0.0.1"]
    assert all(guard.address_allowed(ipaddress.ip_address(a)) for a in allowed)
    assert not any(guard.address_allowed(ipaddress.ip_address(a)) for a in refused)


def test_web_spec_validation_and_fingerprint():
    ok = web("https://fold.example.org/api")
    assert ok.problems() == []
    assert ok.fingerprint() != web("https://fold.example.org/v2").fingerprint()
    assert ok.fingerprint() == web("https://fold.example.org/api", time_limit_s=9, retries=1).fingerprint()
    bad = {
        "ftp://x.org/": "scheme",
        "https://user:pw@x.org/": "password",
        "https:///nohost": "no host",
        "https://x.org/a b": "spaces",
    }
    for url, word in bad.items():
        assert any(word in p for p in web(url).problems()), (url, web(url).problems())
    problems = web("https://x.org/", max_concurrent=0, requests_per_minute=10_000, retries=9,
                   time_limit_s=3600).problems()
    assert len(problems) == 4, problems
    assert any("argv must be empty" in p for p in PredictorSpec(
        name="x", program="x", version="1", argv=("a",), kind="web", endpoint="https://x.org/").problems())
