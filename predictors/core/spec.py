"""Declarative description of one predictor (one method in one parameter variant).

A predictor is data, not code (ARCHITECTURE.md): the program to run is an argv template, a list of
strings with placeholders, never a shell string, so no value ever goes through a shell.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import string
from collections.abc import Iterable
from dataclasses import asdict, dataclass, fields
from typing import Any
from urllib.parse import urlsplit

#: Placeholders an argv element may contain, and what they are replaced with.
PLACEHOLDERS: dict[str, str] = {
    "fasta": "path of a FASTA file holding the input sequence(s), inside the work directory",
    "sequence": "the input sequence itself (letters only)",
    "alignment": "path of the input alignment file, inside the work directory",
    "workdir": "the writable work directory of the run (the current directory of the program)",
    "python": "the Python interpreter that runs CompaRNA's own wrapper programs (the catalogue's -m ones)",
    "venvs": "the directory of method virtualenvs (COMPARNA_VENVS_DIR, default <repo>/.venvs), read-only",
}

#: Added to every placeholder error: a brace meant literally (a Python one-liner's dict or set, a JSON text)
#: is written twice, as in Python's str.format.
BRACE_HINT = "to pass a literal brace, write it twice: {{ and }} (e.g. {{'a': 1}} for {'a': 1})"

INPUT_KINDS = ("single", "collection", "alignment")

#: How a predictor is run (issue 17): a command in the project's sandbox, a command inside a container image
#: its owner uploaded as an OCI/Docker archive, or a web service CompaRNA sends each target to.
KINDS = ("command", "image", "web")
#: Placeholders meaningless inside an owner's image (host paths of the project's own environment).
HOST_PLACEHOLDERS = ("python", "venvs")
#: Limits of web-service methods: parallel requests, requests per minute, retries of a failed request,
#: the time one request (with its retries) may take, and how long an accepted job may wait for its upload.
MAX_WEB_CONCURRENCY = 16
MAX_WEB_RATE_PER_MINUTE = 600
MAX_WEB_RETRIES = 5
MAX_WEB_TIME_LIMIT_S = 600
MIN_UPLOAD_WINDOW_S, MAX_UPLOAD_WINDOW_S = 60, 30 * 24 * 3600

#: Homologue inputs of comparative methods (SCIENCE.md §4): all seed sequences + the query, or the query
#: + 19 seed sequences with 65-95 % identity. None for single-sequence methods.
COMPARATIVE_INPUTS = (None, "seed", "20")

#: Hard ceilings: a spec asking for more is refused, so that no single method can monopolise a worker.
MAX_TIME_LIMIT_S = 6 * 3600
MAX_MEMORY_LIMIT_MB = 64 * 1024
MAX_SEQUENCE_LENGTH = 100_000

#: Declared time complexity in the sequence length (a batch's size is chosen from it, see ``batch``).
COMPLEXITIES = {"n": 1, "n2": 2, "n3": 3, "n4": 4, "n6": 6}
#: The interpreters a batchable wrapper may run under: CompaRNA's, or a method virtualenv's.
_BATCH_PYTHON = re.compile(r"\{python\}|\{venvs\}/[A-Za-z0-9_.-]+/bin/python")
_BATCH_MODULE = re.compile(r"predictors\.programs\.[a-z][a-z0-9_]*")


class InvalidSpec(ValueError):
    """A predictor spec that cannot be run; ``problems`` lists every reason, one sentence each."""

    def __init__(self, name: str, problems: list[str]):
        self.problems = list(problems)
        super().__init__(f"predictor {name!r} is invalid: " + "; ".join(problems))


def argv_placeholders(element: str) -> list[str]:
    """Placeholder names used in one argv element (``{{`` and ``}}`` are literal braces).

    Raises
    ------
    ValueError
        For an unbalanced brace, a positional ``{}`` or a format spec/conversion such as ``{fasta!r}``.
    """
    names = []
    for _literal, field_name, format_spec, conversion in string.Formatter().parse(element):
        if field_name is None:
            continue
        if field_name == "" or field_name.isdigit():
            raise ValueError(f"positional placeholder '{{{field_name}}}' in {element!r}; name it")
        if format_spec or conversion:
            raise ValueError(f"placeholder {field_name!r} in {element!r} has a format spec or conversion")
        names.append(field_name)
    return names


@dataclass(frozen=True)
class PredictorSpec:
    """One runnable predictor variant.

    Parameters
    ----------
    name : str
        Unique name of the method variant, e.g. ``"RNAfold-MFE"``.
    program : str
        The program really run (a binary or one of our wrappers), e.g. ``"ViennaRNA (RNA module)"``.
    version : str
        Version of that program; part of :meth:`fingerprint`.
    argv : tuple of str
        Command template. Placeholders: see :data:`PLACEHOLDERS`. A list is accepted and stored as a tuple.
    input_kind : {"single", "collection", "alignment"}
        What the method reads.
    output_format : str
        A key of :data:`predictors.core.parsers.PARSERS`.
    pseudoknots : bool
        Whether the method can predict pseudoknots.
    max_length : int
        Longest sequence that is run; longer ones are recorded as ``too_long`` without running.
    time_limit_s : float
        Wall-clock limit (CPU time is limited to slightly more).
    memory_limit_mb : int
        Address-space limit (and memory cgroup limit when cgroups are writable).
    image : str or None
        Container image; the container runner is used when set and an engine exists.
    citation, url, description : str
        Shown to users.
    produces_probabilities : bool
        Whether the output carries base-pair probabilities.
    output_file : str or None
        Read the prediction from this file (relative to the work directory) instead of stdout.
    comparative_input : {"seed", "20"} or None
        For comparative methods, which homologue input they get (SCIENCE.md §4); None for single-sequence
        methods. A method run on both inputs is two specs, ``NAME(seed)`` and ``NAME(20)``.
    licence : str
        Licence of the program (and of its parameters/weights when they differ), shown to users.
    training_data : tuple of str
        Declared training data and parameter sources, one entry each: what the method's parameters were
        fitted to, as its paper states. Catalogue entries use the keys of
        :data:`predictors.catalogue.training.SOURCES` (which say which benchmark sets each one overlaps, for
        the train/test leakage analysis); a registered method may give free text. A list is stored as a
        tuple.
    kind : {"command", "image", "web"}
        ``command``: ``argv`` runs in the project's sandbox (or in ``image`` when set). ``image``: ``argv``
        runs inside the image loaded from the owner's uploaded archive ``image_archive`` (placeholders
        ``{python}``/``{venvs}`` do not exist there). ``web``: each target is POSTed to ``endpoint``
        (:mod:`predictors.core.webservice`); ``argv`` is empty; ``time_limit_s`` bounds one request with its
        retries; no endpoint means an upload-only method (its predictions wait for uploads).
    image_archive : str or None
        SHA-256 (hex) of the uploaded image archive, for ``kind="image"``.
    endpoint : str or None
        The web service's URL, for ``kind="web"``.
    max_concurrent, requests_per_minute, retries : int
        Web services: parallel requests, requests started per minute, retries of a transient failure
        (connection refused/reset, HTTP 429/5xx) with exponential backoff.
    upload_window_s : float
        Web services: how long a job the service accepted (HTTP 202) waits for its upload before it is
        recorded as ``timeout``.
    batch : bool
        Whether many targets may run in one launch (:mod:`predictors.core.batch`): only for CompaRNA's
        own wrappers, ``{python} -m predictors.programs.<module> ARGS... {fasta}`` (or a method
        virtualenv's Python), whose ``main`` is then called once per target in one warm process. Arbitrary
        commands, images and web services run one target per launch.
    complexity : str
        Declared time complexity in the length (a key of :data:`COMPLEXITIES`): with the runtimes measured
        so far it bounds how many targets a batch takes.
    """

    name: str
    program: str
    version: str
    argv: tuple[str, ...]
    input_kind: str = "single"
    output_format: str = "dot-bracket"
    pseudoknots: bool = False
    max_length: int = 1000
    time_limit_s: float = 60.0
    memory_limit_mb: int = 2048
    image: str | None = None
    citation: str = ""
    url: str = ""
    produces_probabilities: bool = False
    description: str = ""
    output_file: str | None = None
    comparative_input: str | None = None
    licence: str = ""
    training_data: tuple[str, ...] = ()
    kind: str = "command"
    image_archive: str | None = None
    endpoint: str | None = None
    max_concurrent: int = 2
    requests_per_minute: int = 60
    retries: int = 2
    upload_window_s: float = 7 * 24 * 3600
    batch: bool = False
    complexity: str = "n3"

    def __post_init__(self) -> None:
        # Admin forms and the database hand over lists; store tuples so the spec stays hashable.
        if not isinstance(self.argv, tuple):
            object.__setattr__(self, "argv", tuple(self.argv))
        if not isinstance(self.training_data, tuple):
            object.__setattr__(self, "training_data", tuple(self.training_data))

    # -- validation -------------------------------------------------------------------------------------
    def problems(self) -> list[str]:
        """Every reason this spec cannot be run (empty list when it is valid)."""
        from predictors.core.parsers import PARSERS  # parsers import nothing from here; avoids a cycle

        out: list[str] = []
        if not self.name or not self.name.strip():
            out.append("name is empty")
        elif self.name != self.name.strip() or any(c in self.name for c in "/\\\n\t"):
            out.append(f"name {self.name!r} has surrounding spaces, slashes or control characters")
        if not self.program.strip():
            out.append("program is empty")
        if not self.version.strip():
            out.append("version is empty")
        if self.kind not in KINDS:
            out.append(f"kind {self.kind!r} is not one of {', '.join(KINDS)}")
        web = self.kind == "web"
        if web:
            out.extend(self._web_problems())
        elif not self.argv:
            out.append("argv is empty")
        used: set[str] = set()
        for k, element in enumerate(self.argv):
            if not isinstance(element, str):
                out.append(f"argv[{k}] is {type(element).__name__}, not a string")
                continue
            if "\x00" in element:
                out.append(f"argv[{k}] contains a NUL byte")
            try:
                names = argv_placeholders(element)
            except ValueError as exc:
                out.append(f"argv[{k}]: {exc}; {BRACE_HINT}")
                continue
            for n in names:
                if self.kind == "image" and n in HOST_PLACEHOLDERS:
                    out.append(
                        f"argv[{k}]: {{{n}}} is a path of CompaRNA's own sandbox; it does not exist in your "
                        "image (name the program inside the image)"
                    )
                elif n not in PLACEHOLDERS:
                    out.append(
                        f"argv[{k}]: unknown placeholder {{{n}}}; known: "
                        + ", ".join("{" + p + "}" for p in PLACEHOLDERS)
                        + f"; {BRACE_HINT}"
                    )
            used.update(names)
        if self.argv and isinstance(self.argv[0], str) and not self.argv[0].strip():
            out.append("argv[0] (the program) is empty")
        if self.comparative_input not in COMPARATIVE_INPUTS:
            out.append(f"comparative input {self.comparative_input!r} is not one of (seed), (20) or none")
        elif (self.comparative_input is None) != (self.input_kind == "single"):
            out.append("a comparative input ((seed) or (20)) goes with collection/alignment methods only")
        if self.input_kind not in INPUT_KINDS:
            out.append(f"input kind {self.input_kind!r} is not one of {', '.join(INPUT_KINDS)}")
        elif web:
            pass  # the request carries the sequence (and the alignment of comparative methods)
        elif self.input_kind == "alignment" and "alignment" not in used:
            out.append("an alignment method must use {alignment} in argv")
        elif self.input_kind != "alignment" and not used & {"fasta", "sequence"}:
            out.append("argv passes no input: use {fasta} or {sequence}")
        if self.output_format not in PARSERS:
            out.append(f"unknown output format {self.output_format!r}; known: {', '.join(sorted(PARSERS))}")
        if not isinstance(self.max_length, int) or not 1 <= self.max_length <= MAX_SEQUENCE_LENGTH:
            out.append(f"max length must be an integer in 1..{MAX_SEQUENCE_LENGTH}, got {self.max_length!r}")
        if not isinstance(self.time_limit_s, int | float) or not 0 < self.time_limit_s <= MAX_TIME_LIMIT_S:
            out.append(f"time limit must be in (0, {MAX_TIME_LIMIT_S}] s, got {self.time_limit_s!r}")
        if not isinstance(self.memory_limit_mb, int) or not 16 <= self.memory_limit_mb <= MAX_MEMORY_LIMIT_MB:
            out.append(
                f"memory limit must be an integer in 16..{MAX_MEMORY_LIMIT_MB} MB, got "
                f"{self.memory_limit_mb!r}"
            )
        if self.image is not None and not self.image.strip():
            out.append("image is an empty string; use None for no image")
        if self.kind == "image":
            if not is_sha256(self.image_archive):
                out.append("image archive must be the SHA-256 (64 lower-case hex digits) of an upload")
            if self.image is not None:
                out.append("an image method runs its uploaded archive; leave image empty")
        elif self.image_archive is not None:
            out.append("image archive is only for image methods")
        if self.kind != "web" and self.endpoint is not None:
            out.append("endpoint is only for web-service methods")
        if not all(isinstance(t, str) and t.strip() for t in self.training_data):
            out.append("every training-data entry must be a non-empty string")
        if self.complexity not in COMPLEXITIES:
            out.append(f"complexity {self.complexity!r} is not one of {', '.join(COMPLEXITIES)}")
        if self.batch:
            out.extend(self._batch_problems())
        if self.output_file is not None:
            parts = self.output_file.split("/")
            if not self.output_file or self.output_file.startswith("/") or ".." in parts:
                out.append(f"output file {self.output_file!r} must be a relative path inside the work dir")
        return out

    def _batch_problems(self) -> list[str]:
        argv = list(self.argv)
        if self.kind != "command" or self.image is not None or self.input_kind != "single":
            return ["only a single-sequence command without an image can batch"]
        if (
            len(argv) < 4
            or not _BATCH_PYTHON.fullmatch(argv[0])
            or argv[1] != "-m"
            or not _BATCH_MODULE.fullmatch(argv[2])
            or argv.count("{fasta}") != 1
        ):
            return ["only a wrapper run as {python} -m predictors.programs.MODULE ARGS... {fasta} can batch"]
        for a in argv[3:]:
            with contextlib.suppress(ValueError):  # a bad placeholder is reported by problems()
                if a != "{fasta}" and set(argv_placeholders(a)) - {"python", "venvs"}:
                    return [f"a batch gives each target its own input: {a!r} cannot be batched"]
        return []

    def _web_problems(self) -> list[str]:
        out: list[str] = []
        if self.argv:
            out.append("argv must be empty for a web service (CompaRNA sends the target to the endpoint)")
        if self.endpoint is not None:
            problem = endpoint_problem(self.endpoint)
            if problem:
                out.append(problem)
        if self.image is not None:
            out.append("image is not used by a web service; leave it empty")
        for name, value, top in (
            ("max concurrent", self.max_concurrent, MAX_WEB_CONCURRENCY),
            ("requests per minute", self.requests_per_minute, MAX_WEB_RATE_PER_MINUTE),
        ):
            if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= top:
                out.append(f"{name} must be an integer in 1..{top}, got {value!r}")
        if not isinstance(self.retries, int) or isinstance(self.retries, bool) or not (
            0 <= self.retries <= MAX_WEB_RETRIES
        ):
            out.append(f"retries must be an integer in 0..{MAX_WEB_RETRIES}, got {self.retries!r}")
        if isinstance(self.time_limit_s, int | float) and self.time_limit_s > MAX_WEB_TIME_LIMIT_S:
            out.append(f"time limit of a web service must be at most {MAX_WEB_TIME_LIMIT_S} s per target")
        if not isinstance(self.upload_window_s, int | float) or not (
            MIN_UPLOAD_WINDOW_S <= self.upload_window_s <= MAX_UPLOAD_WINDOW_S
        ):
            out.append(
                f"upload window must be in {MIN_UPLOAD_WINDOW_S}..{MAX_UPLOAD_WINDOW_S} s, got "
                f"{self.upload_window_s!r}"
            )
        return out

    def validate(self) -> PredictorSpec:
        """Return ``self`` when valid, otherwise raise :class:`InvalidSpec` listing every problem."""
        problems = self.problems()
        if problems:
            raise InvalidSpec(self.name, problems)
        return self

    # -- identity ---------------------------------------------------------------------------------------
    def fingerprint(self) -> str:
        """Stable SHA-256 (hex) of everything that changes predictions.

        Program, version, argv, input kind, comparative input, output format and output file; for image
        and web-service methods also the kind, the image archive's SHA-256 and the endpoint (absent for
        commands, so their fingerprints are those of before the kinds existed). Limits, texts (citation,
        licence, declared training data) and the image tag do not change what a method predicts, so
        editing them keeps the method version.
        """
        payload = {
            "comparative_input": self.comparative_input,
            "program": self.program,
            "version": self.version,
            "argv": list(self.argv),
            "input_kind": self.input_kind,
            "output_format": self.output_format,
            "output_file": self.output_file,
        }
        if self.kind != "command":
            payload.update(kind=self.kind, image_archive=self.image_archive, endpoint=self.endpoint)
        blob = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
        return hashlib.sha256(blob.encode()).hexdigest()

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON-able dict (argv as a list)."""
        d = asdict(self)
        d["argv"] = list(self.argv)
        d["training_data"] = list(self.training_data)
        return d

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PredictorSpec:
        """Inverse of :meth:`as_dict`; unknown keys are an error."""
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown predictor spec fields: {', '.join(sorted(unknown))}")
        return cls(**data)


def is_sha256(value: object) -> bool:
    """A SHA-256 digest as 64 lower-case hexadecimal digits."""
    return isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value)


def endpoint_problem(url: str) -> str | None:
    """Why ``url`` cannot be a web-service endpoint (None when its form is acceptable).

    Only the form is checked here (scheme, host, no credentials or fragment); where it points is checked
    when each request connects (:mod:`predictors.core.netguard`).
    """
    if not isinstance(url, str) or not url.strip() or url != url.strip():
        return "endpoint must be a URL without surrounding spaces"
    if len(url) > 2000 or any(ord(c) < 33 or ord(c) == 127 for c in url):
        return "endpoint is longer than 2000 characters or contains spaces or control characters"
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        return f"endpoint is not a valid URL: {exc}"
    if parts.scheme not in ("https", "http"):
        return f"endpoint must be an https:// URL, got scheme {parts.scheme!r}"
    if not parts.hostname:
        return "endpoint has no host"
    if parts.username or parts.password:
        return "endpoint must not carry a user name or password (the callback token authenticates uploads)"
    if parts.fragment:
        return "endpoint must not have a #fragment"
    if port == 0:
        return "endpoint port 0 is not valid"
    return None


def check_unique_names(specs: Iterable[PredictorSpec]) -> None:
    """Raise ``ValueError`` naming every predictor name that occurs more than once."""
    seen: set[str] = set()
    dup: list[str] = []
    for s in specs:
        if s.name in seen and s.name not in dup:
            dup.append(s.name)
        seen.add(s.name)
    if dup:
        raise ValueError(f"duplicate predictor names: {', '.join(dup)}")
