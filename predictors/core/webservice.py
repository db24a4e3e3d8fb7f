"""Web-service predictors: CompaRNA POSTs each target to the method owner's endpoint (issue 17).

The request is JSON::

    {"id": "<request id>", "target": "<target id>", "sequence": "ACGU...", "format": "<output format>",
     "alignment": "<Stockholm text, query row named 'query'>" | null,
     "callback": {"url": "<upload URL>", "token": "<token for this job only>"}}      (when uploads exist)

and the answer is one of

- **200** with the structure: a JSON object ``{"structure": "<text in the declared output format>",
  "probabilities": [[i, j, p], ...]}`` (probabilities optional), a JSON object ``{"pairs": [[i, j], ...]}``,
  or the structure itself as plain text in the declared format; a JSON ``"id"``, when present, must be the
  request's;
- **202** "accepted": the structure will be uploaded later (``callback``, or the owner's API token); the
  run is recorded as ``awaiting`` until the upload arrives or the upload window closes.

Everything the endpoint sends is hostile input: answers are read up to a size cap and parsed like any
program's output; redirects are not followed; connections go only to addresses the
:class:`~predictors.core.netguard.Guard` allows. Transient failures (connection refused or reset, HTTP 429
and 5xx) are retried ``spec.retries`` times with exponential backoff, all within ``spec.time_limit_s``;
after that the outcome is recorded like any other run — ``failed`` ("unreachable: ..."), ``timeout`` or
``unparsable`` — and never turned into an infrastructure retry loop.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import urllib3
from urllib3.exceptions import HTTPError as Urllib3Error
from urllib3.exceptions import ProtocolError, ReadTimeoutError

from comparna.rna.formats import load_json, pair_json_structure
from comparna.rna.structure import StructureFormatError
from predictors.core.job import MESSAGE_MAX_CHARS, Job, RunResult
from predictors.core.netguard import (
    EndpointRefused,
    Guard,
    Unresolvable,
    allowed_networks_from_env,
    guarded_connection_classes,
)
from predictors.core.parsers import (
    ParsedPrediction,
    parse_output,
    parse_probabilities,
)
from predictors.core.spec import PredictorSpec

#: HTTP answers worth another try: the server is overloaded or briefly failing.
TRANSIENT_STATUS = frozenset({429, 500, 502, 503, 504})
USER_AGENT = "CompaRNA-benchmark/1 (+https://github.com/comparna)"


@dataclass(frozen=True)
class WebRequest:
    """What identifies one job to the owner's service (besides the sequence)."""

    id: str = "test"
    target: str = "query"
    callback_url: str | None = None
    callback_token: str | None = None


class _Outcome(Exception):
    """A final outcome reached while talking to the endpoint."""

    def __init__(self, status: str, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


class WebServiceRunner:
    """Runs a ``kind="web"`` spec: one POST per target (with retries), the answer parsed and bounded.

    Parameters
    ----------
    request : WebRequest
        The job's identity and callback (the service layer makes one per prediction).
    allowed_networks : tuple of networks or None
        Non-public networks the endpoint may be in (default: ``COMPARNA_WEBSERVICE_ALLOWED_NETWORKS``).
    backoff_s : float
        First retry delay; doubled for each further retry (capped by the time left).
    max_response_bytes : int
        Longest answer read; a longer one is ``failed``.
    """

    name = "web-service"
    isolation = "network"

    def __init__(
        self,
        *,
        request: WebRequest | None = None,
        allowed_networks=None,
        backoff_s: float = 2.0,
        max_response_bytes: int = 8 * 2**20,
    ):
        self.request = request or WebRequest()
        self.allowed = allowed_networks_from_env() if allowed_networks is None else tuple(allowed_networks)
        self.backoff_s = backoff_s
        self.max_response_bytes = max_response_bytes

    def run(self, spec: PredictorSpec, job: Job) -> RunResult:
        started = time.monotonic()
        attempts = 0
        http_status: int | None = None
        host = urlsplit(spec.endpoint).hostname if spec.endpoint else None
        limits = {
            "time_limit_s": spec.time_limit_s,
            "retries": spec.retries,
            "backoff_s": self.backoff_s,
            "max_response_bytes": self.max_response_bytes,
            "max_concurrent": spec.max_concurrent,
            "requests_per_minute": spec.requests_per_minute,
            "redirects": "not followed",
            "endpoint_host": host,
        }

        def result(status: str, message: str = "", parsed: ParsedPrediction | None = None, **kw) -> RunResult:
            return RunResult(
                status=status,
                runner=self.name,
                limits=limits,
                message=message[:MESSAGE_MAX_CHARS],
                runtime_s=time.monotonic() - started,
                structure=parsed.structure if parsed else None,
                probabilities=parsed.probabilities if parsed else None,
                resources={"attempts": attempts, "http_status": http_status},
                predictor=spec.name,
                fingerprint=spec.fingerprint(),
                **kw,
            )

        if not spec.endpoint:
            return result("awaiting", "upload-only method: the prediction waits for an upload")
        try:
            body = self._payload(spec, job)
        except OSError as exc:
            return result("infrastructure_error", f"cannot read the job's input: {exc}")
        deadline = started + spec.time_limit_s
        last = "no attempt made"
        for attempt in range(spec.retries + 1):
            attempts = attempt + 1
            try:
                http_status, headers, text = self._post(spec.endpoint, body, deadline)
            except _Outcome as outcome:
                if outcome.status != "retry":
                    return result(outcome.status, outcome.message)
                last = outcome.message
                retry_after = None
            else:
                if http_status in TRANSIENT_STATUS:
                    last = f"HTTP {http_status} from the endpoint: {_excerpt(text)}"
                    retry_after = _retry_after(headers.get("retry-after"))
                else:
                    return self._answer(spec, job, http_status, text, result)
            if attempt == spec.retries:
                break
            delay = retry_after if retry_after is not None else self.backoff_s * 2**attempt
            if time.monotonic() + delay >= deadline:
                break
            time.sleep(delay)
        if last.startswith("HTTP"):
            return result("failed", f"{last} (after {attempts} attempt{'s' * (attempts > 1)})")
        if last.startswith("timeout"):
            return result("timeout", last)
        return result("failed", f"unreachable: {last} (after {attempts} attempt{'s' * (attempts > 1)})")

    # -- request ------------------------------------------------------------------------------------------
    def _payload(self, spec: PredictorSpec, job: Job) -> bytes:
        alignment = None
        if job.alignment is not None:
            alignment = (Path(job.workdir) / job.alignment).read_text()
        data: dict[str, Any] = {
            "id": self.request.id,
            "target": self.request.target,
            "sequence": job.sequence,
            "format": spec.output_format,
            "alignment": alignment,
        }
        if self.request.callback_url:
            data["callback"] = {"url": self.request.callback_url, "token": self.request.callback_token}
        return json.dumps(data).encode()

    def _post(self, url: str, body: bytes, deadline: float) -> tuple[int, dict, str]:
        """One POST; (status, headers, body text) or an :class:`_Outcome` (``retry`` for transient ones)."""
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise _Outcome("timeout", "timeout: no answer within the time limit")
        parts = urlsplit(url)
        guard = Guard(self.allowed)
        try:
            addresses = guard.resolve(parts.hostname, parts.port or (443 if parts.scheme == "https" else 80))
            guard.check_scheme(parts.scheme, addresses)
        except Unresolvable as exc:
            raise _Outcome("retry", str(exc)) from None
        except EndpointRefused as exc:
            raise _Outcome("failed", f"endpoint refused: {exc}") from None
        http_cls, https_cls = guarded_connection_classes(guard)
        pool_cls = urllib3.HTTPSConnectionPool if parts.scheme == "https" else urllib3.HTTPConnectionPool
        pool = pool_cls(
            parts.hostname,
            parts.port,
            timeout=urllib3.Timeout(connect=min(remaining, 10.0), read=remaining),
            retries=False,
            maxsize=1,
            block=False,
        )
        pool.ConnectionCls = https_cls if parts.scheme == "https" else http_cls
        path = parts.path or "/"
        if parts.query:
            path += "?" + parts.query
        # The read timeout is per socket operation; a server trickling bytes is cut at the deadline.
        watchdog = threading.Timer(remaining, guard.close_all)
        watchdog.daemon = True
        watchdog.start()
        try:
            response = pool.urlopen(
                "POST",
                path,
                body=body,
                headers={
                    "Content-Type": "application/json",
                    "Accept": "application/json, text/plain",
                    "User-Agent": USER_AGENT,
                },
                redirect=False,
                preload_content=False,
                assert_same_host=False,
                retries=False,
            )
            try:
                raw = response.read(self.max_response_bytes + 1, decode_content=True)
            finally:
                response.release_conn()
            status, headers = response.status, {k.lower(): v for k, v in response.headers.items()}
        except ReadTimeoutError:
            raise _Outcome("timeout", f"timeout: no complete answer within {remaining:.1f} s") from None
        except (urllib3.exceptions.NewConnectionError, urllib3.exceptions.ConnectTimeoutError) as exc:
            if time.monotonic() >= deadline:
                raise _Outcome("timeout", f"timeout: no connection within {remaining:.1f} s") from None
            raise _Outcome("retry", _reason(exc)) from None
        except (ProtocolError, Urllib3Error, OSError) as exc:
            if time.monotonic() >= deadline - 0.05:
                raise _Outcome("timeout", f"timeout: no complete answer within {remaining:.1f} s") from None
            raise _Outcome("retry", _reason(exc)) from None
        finally:
            watchdog.cancel()
            pool.close()
        if len(raw) > self.max_response_bytes:
            raise _Outcome("failed", f"the answer is longer than {self.max_response_bytes} bytes")
        if 300 <= status < 400:
            raise _Outcome("failed", f"HTTP {status}: redirects are not followed; give the final URL")
        return status, headers, raw.decode("utf-8", errors="replace")

    # -- answer -------------------------------------------------------------------------------------------
    def _answer(self, spec: PredictorSpec, job: Job, status: int, text: str, result) -> RunResult:
        if status == 202:
            return result("awaiting", "the service accepted the job; the structure is to be uploaded")
        if status != 200:
            return result("failed", f"HTTP {status} from the endpoint: {_excerpt(text)}")
        try:
            parsed = parse_answer(spec.output_format, text, job.sequence, request_id=self.request.id)
        except StructureFormatError as exc:
            return result("unparsable", f"unparsable answer: {exc}", stdout=text[:4096])
        return result("ok", parsed=parsed, stdout=text[:4096])


def parse_answer(
    output_format: str, text: str, sequence: str, *, request_id: str | None = None
) -> ParsedPrediction:
    """The structure in a service's answer (or an upload): JSON ``structure``/``pairs``, or plain text.

    Raises
    ------
    StructureFormatError
        With a message saying what is wrong (wrong length, a pair index outside the sequence, ...).
    """
    try:
        return _parse_answer(output_format, text, sequence, request_id)
    except StructureFormatError:
        raise
    except RecursionError:
        raise StructureFormatError("the answer is nested too deeply") from None
    except (ValueError, TypeError, OverflowError, IndexError, KeyError, AttributeError) as exc:
        # Never an exception of another kind: it would re-queue the prediction forever (issue 26).
        raise StructureFormatError(f"{type(exc).__name__}: {str(exc)[:200]}") from None


def _parse_answer(output_format: str, text: str, sequence: str, request_id: str | None) -> ParsedPrediction:
    stripped = text.strip()
    if not stripped:
        raise StructureFormatError("the answer is empty")
    if stripped[0] == "{":  # a dot-bracket line may start with "[" (a pseudoknot), never with "{"
        data = load_json(stripped)  # huge integers, NaN, deep nesting: a StructureFormatError
        if not isinstance(data, dict):
            raise StructureFormatError("the JSON answer must be an object with 'structure' or 'pairs'")
        if request_id is not None and "id" in data and str(data["id"]) != request_id:
            raise StructureFormatError(f"the answer is for job {str(data['id'])[:100]!r}, not {request_id!r}")
        if "structure" in data:
            if not isinstance(data["structure"], str):
                raise StructureFormatError("'structure' must be a string in the declared output format")
            parsed = parse_output(output_format, data["structure"], sequence)
            probs = data.get("probabilities")
            if probs is not None:
                parsed = ParsedPrediction(parsed.structure, parse_probabilities(probs, len(sequence)))
            return parsed
        if "pairs" in data:
            structure = pair_json_structure(data, length=len(sequence))
            probs = data.get("probabilities")
            probabilities = None if probs is None else parse_probabilities(probs, len(sequence))
            return ParsedPrediction(structure, probabilities)
        raise StructureFormatError("the JSON answer has neither 'structure' nor 'pairs'")
    return parse_output(output_format, text, sequence)


def _excerpt(text: str, n: int = 200) -> str:
    text = " ".join(text.split())
    return (text[:n] + "...") if len(text) > n else (text or "(empty body)")


def _retry_after(value: str | None) -> float | None:
    """Seconds of a Retry-After header given in seconds (HTTP dates are ignored: backoff applies)."""
    if value and value.strip().isdigit() and len(value.strip()) <= 6:
        return float(value.strip())
    return None


def _reason(exc: BaseException) -> str:
    text = str(exc)
    for known in ("Connection refused", "Connection reset", "timed out", "Name or service not known"):
        if known.lower() in text.lower():
            return known.lower()
    return text.split(": ", 1)[-1][:200] or type(exc).__name__
