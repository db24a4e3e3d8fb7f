"""``/submit/``: how to submit a method — accounts, the fields with an example per kind, what the sandbox
offers (placeholders, wrappers, virtualenvs, programs: all read from the code by
:mod:`comparna.owners.sandbox_help`), the scored test run and what happens after saving.

The examples are real :class:`PredictorSpec` objects, checked by the tests like any registered spec.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.http import HttpResponse
from django.views import View
from django.views.generic import TemplateView

from comparna.owners.forms import INPUT_CHOICES, KIND_CHOICES
from comparna.owners.methods import is_approved_owner
from predictors import sandbox_help
from predictors.catalogue import CATALOGUE
from predictors.core.spec import KINDS, MAX_WEB_TIME_LIMIT_S, PredictorSpec
from predictors.forms import TEST_SEQUENCE
from predictors.trials import reference_targets, time_limit_s

#: Shown where an example needs the SHA-256 of the owner's own upload (the form fills it in).
EXAMPLE_ARCHIVE_SHA256 = "0" * 64


@dataclass(frozen=True)
class Example:
    title: str
    spec: PredictorSpec
    note: str

    @property
    def rows(self) -> list[tuple[str, str]]:
        """(form label, value) of the fields a user fills in, in the form's order."""
        s = self.spec
        kinds = dict(KIND_CHOICES)
        inputs = dict(INPUT_CHOICES)
        rows = [
            ("Name", s.name),
            ("Kind", kinds[s.kind]),
            ("Program", s.program),
            ("Version", s.version),
            ("Input", inputs[s.comparative_input or "single"]),
            ("Output format", s.output_format),
        ]
        if s.kind == "web":
            rows.append(("Endpoint URL", s.endpoint or ""))
            rows.append(("Parallel requests / per minute", f"{s.max_concurrent} / {s.requests_per_minute}"))
        else:
            rows.append(("Command (one argument per line)", "\n".join(s.argv)))
            if s.output_file:
                rows.append(("Output file", s.output_file))
        if s.kind == "image":
            rows.append(("Image archive", "myfold.tar (from podman save / docker save)"))
        rows.append(("Max length / time limit", f"{s.max_length} nt / {s.time_limit_s:g} s"))
        return rows


def _catalogue_argv(name: str) -> tuple[str, ...] | None:
    return next((s.argv for s in CATALOGUE if s.name == name), None)


def examples() -> list[Example]:
    """One example spec per kind (command, command with an installed program, image, web, comparative)."""
    out = []
    mfe = _catalogue_argv("RNAfold-MFE")
    if mfe is not None:
        out.append(
            Example(
                "Command: one of CompaRNA's wrappers",
                PredictorSpec(
                    name="MyFold-MFE",
                    program="ViennaRNA (RNA module)",
                    version="2.6",
                    argv=mfe,
                    output_format="dot-bracket",
                    max_length=1000,
                    time_limit_s=60,
                ),
                "The same command as the catalogue's RNAfold-MFE: {python} is the interpreter of CompaRNA's "
                "environment, {fasta} the input file.",
            )
        )
    if sandbox_help.find_program("RNAfold"):
        out.append(
            Example(
                "Command: a program installed on this server",
                PredictorSpec(
                    name="MyRNAfold",
                    program="RNAfold",
                    version="2.5",
                    argv=("RNAfold", "--noPS", "{fasta}"),
                    output_format="dot-bracket",
                    max_length=1000,
                    time_limit_s=60,
                ),
                "A program on the sandbox's PATH, called by its name (see the list of programs below).",
            )
        )
    out.append(
        Example(
            "Container image",
            PredictorSpec(
                name="MyNet",
                program="mynet",
                version="1.0",
                argv=("python3", "/opt/mynet/predict.py", "--out", "{workdir}/out.bpseq", "{fasta}"),
                output_format="bpseq",
                output_file="out.bpseq",
                kind="image",
                image_archive=EXAMPLE_ARCHIVE_SHA256,
                max_length=500,
                time_limit_s=300,
                memory_limit_mb=4096,
            ),
            "The command runs inside your image (its entrypoint is ignored), with /job as the work "
            "directory holding input.fa; here the structure is read from a file it writes.",
        )
    )
    out.append(
        Example(
            "Web service",
            PredictorSpec(
                name="MyServer",
                program="MyServer",
                version="2024-06",
                argv=(),
                kind="web",
                endpoint="https://fold.example.org/comparna",
                max_concurrent=2,
                requests_per_minute=60,
                time_limit_s=min(120, MAX_WEB_TIME_LIMIT_S),
            ),
            'CompaRNA POSTs {"id", "target", "sequence", "alignment", "format", "callback"} as JSON; answer '
            '200 with {"structure": "((...))"} or 202 and upload the structure later.',
        )
    )
    alifold = _catalogue_argv("RNAalifold(seed)")
    if alifold is not None:
        out.append(
            Example(
                "Comparative (alignment input)",
                PredictorSpec(
                    name="MyAliFold(seed)",
                    program="ViennaRNA (RNA module)",
                    version="2.6",
                    argv=alifold,
                    input_kind="alignment",
                    comparative_input="seed",
                    output_format="pairs-json",
                    max_length=1000,
                    time_limit_s=120,
                ),
                "{alignment} is a Stockholm file of the target's Rfam seed sequences with the query named "
                "'query'; the prediction is for the query.",
            )
        )
    return out


class SubmitView(TemplateView):
    """``/submit/``: public help page; the buttons lead to sign-up, sign-in or the registration form."""

    template_name = "owners/submit.html"

    def get_context_data(self, **kwargs):
        ctx = super().get_context_data(**kwargs)
        user = self.request.user
        wrappers = sandbox_help.wrappers()
        ctx.update(
            approved=user.is_authenticated and is_approved_owner(user),
            examples=examples(),
            kinds=KINDS,
            placeholders=sandbox_help.placeholders(),
            wrappers=[w for w in wrappers if w.methods],
            helpers=[w for w in wrappers if not w.methods],
            venvs=sandbox_help.venvs(),
            sandbox_path=sandbox_help.sandbox_path(),
            n_programs=len(sandbox_help.programs()),
            test_limit_s=time_limit_s(),
            test_sequence_length=len(TEST_SEQUENCE),
            reference_targets=reference_targets()[:5],
            max_mb=settings.IMAGE_ARCHIVE_MAX_MB,
        )
        return ctx


class SandboxProgramsView(View):
    """``/submit/programs.txt``: every program on the sandbox's PATH, one name a line."""

    def get(self, request):
        names = sandbox_help.programs()
        head = f"# {len(names)} programs on the sandbox's PATH ({sandbox_help.sandbox_path()})\n"
        return HttpResponse(head + "\n".join(names) + "\n", content_type="text/plain; charset=utf-8")
