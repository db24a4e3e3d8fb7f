"""The admin form that registers (or edits) a predictor: a spec, checked by a test run before it is saved.

The command is an argument list, typed as a JSON list or one argument per line, never a shell string
(ARCHITECTURE.md): nothing a method developer types ever reaches a shell. Saving is allowed only after a
successful test run of exactly the spec being saved; a signed token carries the hash of the tested spec
from the test-run response to the save request, so a changed field needs a new test run.
"""

from __future__ import annotations

import hashlib
import json

from django import forms
from django.core import signing
from django.core.exceptions import ValidationError

from predictors.core.limits import memory_limit_problem
from predictors.core.parsers import PARSERS
from predictors.core.spec import (
    MAX_MEMORY_LIMIT_MB,
    MAX_SEQUENCE_LENGTH,
    MAX_TIME_LIMIT_S,
    PLACEHOLDERS,
    PredictorSpec,
)
from predictors.sandbox_help import program_problem

#: Yeast tRNA-Phe (PDB 1EHZ), 76 nt: short, real and with a well-known cloverleaf.
TEST_SEQUENCE = "GCGGAUUUAGCUCAGUUGGGAGAGCGCCAGACUGAAGAUCUGGAGGUCCUGUGUUCGAUCCACAGAAUUCGCACCA"
TEST_SEQUENCE_MAX_LENGTH = 500
_TOKEN_SALT = "predictors.forms.test-run"
_SHELL_OPERATORS = {"|", "||", "&", "&&", ";", ">", ">>", "<", "<<", "2>", "2>&1", "$(", "`"}


def parse_argv(text: str) -> list[str]:
    """The argument list typed in the form: a JSON list of strings, or one argument per line.

    Raises
    ------
    forms.ValidationError
        For invalid JSON, a non-string element, an empty list, or something that looks like a shell
        command line (a program name with spaces, a shell operator as an argument).
    """
    text = text.strip()
    if not text:
        raise forms.ValidationError("Give the command: a JSON list or one argument per line.")
    if text.startswith("["):
        try:
            argv = json.loads(text)
        except json.JSONDecodeError as exc:
            raise forms.ValidationError(f"Invalid JSON list: {exc.msg} (line {exc.lineno}).") from exc
        if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
            raise forms.ValidationError("The JSON must be a list of strings.")
    else:
        # One argument per line; surrounding blanks are not part of an argument.
        argv = [line.strip() for line in text.splitlines() if line.strip()]
    if not argv:
        raise forms.ValidationError("The command is empty.")
    if any(c.isspace() for c in argv[0]):
        raise forms.ValidationError(
            f"The program {argv[0]!r} contains spaces: this looks like a shell command line. Commands are "
            "never run through a shell; give one argument per line or a JSON list."
        )
    for k, arg in enumerate(argv):
        if arg in _SHELL_OPERATORS or arg.startswith("$("):
            raise forms.ValidationError(
                f"Argument {k} ({arg!r}) is a shell operator; commands are never run through a shell, so "
                "pipes and redirections do not work. Write the prediction to stdout or name an output file."
            )
    return argv


def spec_token(spec: PredictorSpec) -> str:
    """Signed proof that ``spec`` (all its fields) passed a test run."""
    return signing.dumps(_spec_hash(spec), salt=_TOKEN_SALT)


def token_matches(token: str, spec: PredictorSpec) -> bool:
    try:
        return signing.loads(token, salt=_TOKEN_SALT) == _spec_hash(spec)
    except signing.BadSignature:
        return False


def _spec_hash(spec: PredictorSpec) -> str:
    blob = json.dumps(spec.as_dict(), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()



def validate_memory_limit(value: int) -> None:
    """Refuse a memory limit above what this host gives a run (its memory, read now, minus headroom)."""
    problem = memory_limit_problem(value)
    if problem:
        raise ValidationError(problem[0].upper() + problem[1:] + ".")

class PredictorForm(forms.Form):
    """Everything of a single-sequence :class:`PredictorSpec`, plus the test sequence and ``active``."""

    name = forms.CharField(max_length=100, help_text="Unique name of the method variant, e.g. MyFold-MFE.")
    program = forms.CharField(max_length=200, help_text="The program really run, e.g. myfold.")
    version = forms.CharField(
        max_length=100, help_text="Its version; a new version makes a new method version."
    )
    argv = forms.CharField(
        label="Command",
        widget=forms.Textarea(attrs={"rows": 6, "cols": 60, "style": "font-family: monospace"}),
        help_text="One argument per line, or a JSON list such as [\"myfold\", \"--noPS\", \"{fasta}\"]. "
        "Placeholders: " + ", ".join("{" + p + "}" for p in PLACEHOLDERS) + ". Never a shell string; the "
        "programs the sandbox has are listed on /submit/.",
    )
    output_format = forms.ChoiceField(choices=())
    output_file = forms.CharField(
        required=False, max_length=200,
        help_text="Read the prediction from this file in the work directory instead of stdout.",
    )
    pseudoknots = forms.BooleanField(required=False, help_text="The method can predict pseudoknots.")
    produces_probabilities = forms.BooleanField(required=False)
    max_length = forms.IntegerField(
        initial=1000, min_value=1, max_value=MAX_SEQUENCE_LENGTH,
        help_text="Longer targets are recorded as 'too long' without running.",
    )
    time_limit_s = forms.FloatField(
        initial=300, min_value=0.1, max_value=MAX_TIME_LIMIT_S, label="Time limit (s)"
    )
    memory_limit_mb = forms.IntegerField(
        initial=2048, min_value=16, max_value=MAX_MEMORY_LIMIT_MB, label="Memory limit (MB)",
        validators=[validate_memory_limit],
    )
    image = forms.CharField(required=False, max_length=200, help_text="Container image (optional).")
    citation = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2, "cols": 60}))
    url = forms.URLField(required=False, assume_scheme="https")
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2, "cols": 60}))
    active = forms.BooleanField(
        required=False, initial=True,
        help_text="Active methods are queued on every target of the static benchmark and on new PDB targets.",
    )
    test_sequence = forms.CharField(
        initial=TEST_SEQUENCE, max_length=TEST_SEQUENCE_MAX_LENGTH,
        widget=forms.TextInput(attrs={"size": 80, "style": "font-family: monospace"}),
        help_text="The test run folds this sequence (default: yeast tRNA-Phe, 76 nt).",
    )
    tested = forms.CharField(required=False, widget=forms.HiddenInput)
    trial = forms.CharField(required=False, widget=forms.HiddenInput)  # the pending test run's id

    def __init__(self, *args, fixed_name: str | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["output_format"].choices = [(k, k) for k in sorted(PARSERS)]
        self.fixed_name = fixed_name
        if fixed_name is not None:
            # Editing: the name is the method's identity; a new name is a new method.
            self.fields["name"].disabled = True
            self.fields["name"].initial = fixed_name
        self.spec: PredictorSpec | None = None

    @classmethod
    def initial_from_spec(cls, spec: PredictorSpec, *, active: bool) -> dict:
        data = spec.as_dict()
        data["argv"] = "\n".join(spec.argv)
        data["image"] = spec.image or ""
        data["output_file"] = spec.output_file or ""
        data["active"] = active
        return {k: v for k, v in data.items() if k in cls.base_fields}

    def clean_argv(self) -> list[str]:
        return parse_argv(self.cleaned_data["argv"])

    def clean_test_sequence(self) -> str:
        seq = "".join(self.cleaned_data["test_sequence"].split()).upper().replace("T", "U")
        if not seq.isascii() or not seq.isalpha():
            raise forms.ValidationError("The test sequence may contain letters only.")
        return seq

    def clean(self) -> dict:
        data = super().clean()
        if self.errors:
            return data
        spec = PredictorSpec(
            name=data["name"].strip(),
            program=data["program"].strip(),
            version=data["version"].strip(),
            argv=tuple(data["argv"]),
            input_kind="single",
            output_format=data["output_format"],
            pseudoknots=data["pseudoknots"],
            max_length=data["max_length"],
            time_limit_s=float(data["time_limit_s"]),
            memory_limit_mb=data["memory_limit_mb"],
            image=data["image"].strip() or None,
            citation=data["citation"].strip(),
            url=data["url"].strip(),
            produces_probabilities=data["produces_probabilities"],
            description=data["description"].strip(),
            output_file=data["output_file"].strip() or None,
        )
        problems = spec.problems()
        if problems:
            # Field-specific where the message says which field it is about; otherwise on the form.
            for problem in problems:
                field = next(
                    (f for f, key in _PROBLEM_FIELDS if problem.startswith(key)), None
                )
                self.add_error(field, problem)
            return data
        missing = program_problem(spec.argv, "command") if spec.image is None else None
        if missing:  # refused before a test run: the sandbox would fail to start it (execvp)
            self.add_error("argv", missing[0].upper() + missing[1:] + ".")
            return data
        self.spec = spec
        return data


# Which form field a PredictorSpec.problems() message is about, by its first words.
_PROBLEM_FIELDS = (
    ("argv", "argv"),
    ("argv", "an alignment method"),
    ("name", "name"),
    ("program", "program"),
    ("version", "version"),
    ("output_format", "unknown output format"),
    ("max_length", "max length"),
    ("time_limit_s", "time limit"),
    ("memory_limit_mb", "memory limit"),
    ("image", "image"),
    ("output_file", "output file"),
)
