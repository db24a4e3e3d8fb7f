"""Forms of the owner's pages: sign-up, a method of any kind (command, image, web service), API tokens."""

from __future__ import annotations

from django import forms
from django.contrib.auth import get_user_model, password_validation

from comparna.owners.methods import name_conflicts
from comparna.owners.names import NAME_UNAVAILABLE, name_problem, normalise_name
from predictors.core.parsers import PARSERS
from predictors.core.spec import (
    HOST_PLACEHOLDERS,
    MAX_MEMORY_LIMIT_MB,
    MAX_SEQUENCE_LENGTH,
    MAX_TIME_LIMIT_S,
    MAX_UPLOAD_WINDOW_S,
    MAX_WEB_CONCURRENCY,
    MAX_WEB_RATE_PER_MINUTE,
    MAX_WEB_RETRIES,
    PLACEHOLDERS,
    PredictorSpec,
)
from predictors.forms import (
    _PROBLEM_FIELDS,
    TEST_SEQUENCE,
    TEST_SEQUENCE_MAX_LENGTH,
    parse_argv,
    validate_memory_limit,
)
from predictors.sandbox_help import program_problem
from predictors.trials import no_alignment_message, reference_targets, stored_alignment

KIND_CHOICES = [
    ("command", "Command in CompaRNA's sandbox"),
    ("image", "Your container image (OCI/Docker archive)"),
    ("web", "Your web service"),
]
#: What the method reads: one sequence, or the stored alignment of the target's family (SCIENCE.md §4).
INPUT_CHOICES = [
    ("single", "Single sequence"),
    ("seed", "Comparative: alignment of the query with all Rfam seed sequences"),
    ("20", "Comparative: alignment of the query with 19 seed sequences of 65-95 % identity"),
]
_EXTRA_PROBLEM_FIELDS = (
    ("endpoint", "endpoint"),
    ("max_concurrent", "max concurrent"),
    ("requests_per_minute", "requests per minute"),
    ("retries", "retries"),
    ("upload_window_h", "upload window"),
    ("time_limit_s", "time limit of a web service"),
    ("image_archive", "image archive"),
    ("image_archive", "an image method"),
)


class SignUpForm(forms.Form):
    """A new owner. Says nothing about other accounts: a taken (or look-alike) user name or address is
    answered like a new one and told by e-mail (:func:`comparna.owners.accounts.sign_up`)."""

    username = forms.RegexField(
        # begins with a letter or digit: never "-", "=", "@" or "+" that a spreadsheet reads as a formula
        regex=r"^[A-Za-z0-9][A-Za-z0-9_.-]{2,39}$",
        max_length=40,
        help_text="3-40 letters, digits, dots, dashes or underscores, beginning with a letter or digit.",
        error_messages={
            "invalid": "Use 3-40 letters, digits, dots, dashes or underscores, beginning with a letter or "
            "digit."
        },
    )
    email = forms.EmailField(help_text="A confirmation link is sent here; digests too.")
    affiliation = forms.CharField(max_length=200, required=False, help_text="Lab or institution (optional).")
    password1 = forms.CharField(label="Password", widget=forms.PasswordInput, strip=False)
    password2 = forms.CharField(label="Password again", widget=forms.PasswordInput, strip=False)

    def clean_email(self) -> str:
        # Never says whether an account has this address (issue 26): accounts.sign_up answers the same and
        # tells the address's owner instead.
        return self.cleaned_data["email"].strip()

    def clean(self) -> dict:
        data = super().clean()
        p1, p2 = data.get("password1"), data.get("password2")
        if p1 and p2 and p1 != p2:
            self.add_error("password2", "The two passwords differ.")
        elif p1:
            user = get_user_model()(username=data.get("username", ""), email=data.get("email", ""))
            try:
                password_validation.validate_password(p1, user)
            except forms.ValidationError as exc:
                self.add_error("password1", exc)
        return data


class OwnerMethodForm(forms.Form):
    """Everything of a :class:`PredictorSpec` of any kind, plus the test sequence; checked by a test run.

    The page shows the fields in :attr:`FIELDSETS`: a kind's own fields in a fieldset marked with the kinds
    it belongs to, which ``static/comparna/owner_form.js`` hides for the other kinds (without JavaScript all
    are shown; :meth:`clean` reads only the chosen kind's fields either way).
    """

    #: (key, kinds the fieldset belongs to — empty for every kind —, legend, field names)
    FIELDSETS = (
        ("method", "", "The method", ("name", "kind", "program", "version", "input", "output_format")),
        ("command", "command image", "Command (command and image kinds)", ("argv", "output_file")),
        ("image", "image", "Container image", ("archive", "image_archive")),
        ("web", "web", "Web service", (
            "endpoint", "max_concurrent", "requests_per_minute", "retries", "upload_window_h",
        )),
        ("limits", "", "Limits and what it predicts", (
            "pseudoknots", "produces_probabilities", "max_length", "time_limit_s", "memory_limit_mb",
        )),
        ("about", "", "Description", ("description", "citation", "url", "licence", "training_data")),
        ("test", "", "Test run", ("test_target", "test_sequence")),
    )

    name = forms.CharField(max_length=100, help_text="Unique name, e.g. MyFold-MFE.")
    kind = forms.ChoiceField(choices=KIND_CHOICES, widget=forms.RadioSelect, initial="command")
    program = forms.CharField(max_length=200, help_text="The program (or service) really run, e.g. myfold.")
    version = forms.CharField(
        max_length=100, help_text="Its version; a new version makes a new method version."
    )
    input = forms.ChoiceField(choices=INPUT_CHOICES, initial="single", label="Input")
    output_format = forms.ChoiceField(
        choices=(), initial="dot-bracket", help_text="Format of the structure your method gives back."
    )
    argv = forms.CharField(
        label="Command",
        required=False,
        widget=forms.Textarea(attrs={"rows": 4, "cols": 60, "class": "mono"}),
        help_text="Command and image kinds: one argument per line, or a JSON list, e.g. "
        '["python3", "/opt/predict.py", "{fasta}"]. Placeholders: '
        + ", ".join("{" + p + "}" for p in PLACEHOLDERS if p not in HOST_PLACEHOLDERS)
        + "; in CompaRNA's sandbox also "
        + " and ".join("{" + p + "}" for p in HOST_PLACEHOLDERS)
        + ". Never a shell string. A brace meant literally is written twice: a Python one-liner "
        "print({'a': 1}) is given as print({{'a': 1}}). The programs and wrappers that exist are listed on "
        "the Submit a method page.",
    )
    output_file = forms.CharField(
        required=False, max_length=200, help_text="Read the prediction from this file in the work directory."
    )
    archive = forms.FileField(
        required=False,
        label="Image archive",
        help_text="Image kind: the output of 'podman save' or 'docker save' (tar or tar.gz).",
    )
    image_archive = forms.ChoiceField(
        required=False,
        label="Or an archive you uploaded before",
        choices=(),
    )
    endpoint = forms.CharField(
        required=False,
        max_length=2000,
        label="Endpoint URL",
        help_text="Web kind: CompaRNA POSTs each target here (https://). Leave empty for a method whose "
        "predictions you only upload through the API.",
    )
    max_concurrent = forms.IntegerField(
        initial=2, min_value=1, max_value=MAX_WEB_CONCURRENCY, label="Parallel requests"
    )
    requests_per_minute = forms.IntegerField(initial=60, min_value=1, max_value=MAX_WEB_RATE_PER_MINUTE)
    retries = forms.IntegerField(
        initial=2,
        min_value=0,
        max_value=MAX_WEB_RETRIES,
        help_text="Retries of a refused connection, HTTP 429 or 5xx (with backoff).",
    )
    upload_window_h = forms.FloatField(
        initial=168,
        min_value=1 / 60,
        max_value=MAX_UPLOAD_WINDOW_S / 3600,
        label="Upload window (hours)",
        help_text="How long a job your service accepted (HTTP 202) waits for its upload.",
    )
    pseudoknots = forms.BooleanField(required=False, help_text="The method can predict pseudoknots.")
    produces_probabilities = forms.BooleanField(required=False)
    max_length = forms.IntegerField(
        initial=1000,
        min_value=1,
        max_value=MAX_SEQUENCE_LENGTH,
        help_text="Longer targets are recorded as 'too long' without running.",
    )
    time_limit_s = forms.FloatField(
        initial=300,
        min_value=0.1,
        max_value=MAX_TIME_LIMIT_S,
        label="Time limit (s)",
        help_text="Per target (web services: one request with its retries, at most 600 s).",
    )
    memory_limit_mb = forms.IntegerField(
        initial=2048, min_value=16, max_value=MAX_MEMORY_LIMIT_MB, label="Memory limit (MB)",
        validators=[validate_memory_limit],
    )
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2, "cols": 60}))
    citation = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2, "cols": 60}))
    url = forms.URLField(required=False, assume_scheme="https")
    licence = forms.CharField(required=False, max_length=200)
    training_data = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2, "cols": 60}),
        help_text="What the parameters were fitted to, one source per line (used for the leakage analysis).",
    )
    test_target = forms.ChoiceField(
        required=False,
        choices=(),
        label="Test target",
        help_text="The test run predicts this target and scores it against its known reference "
        "(MCC, F1). Choose “your own sequence” to test on the sequence below (then not scored unless it is "
        "a benchmark target's).",
    )
    test_sequence = forms.CharField(
        initial=TEST_SEQUENCE,
        max_length=TEST_SEQUENCE_MAX_LENGTH,
        widget=forms.TextInput(attrs={"size": 80, "class": "mono"}),
        required=False,
        label="Your own test sequence",
        help_text="Used when no test target is chosen (default: yeast tRNA-Phe, 76 nt).",
    )
    tested = forms.CharField(required=False, widget=forms.HiddenInput)
    trial = forms.CharField(required=False, widget=forms.HiddenInput)

    def __init__(self, *args, uploads=(), fixed_name: str | None = None, user=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.user = user  # whose own methods' names a new name may not repeat (name_conflicts)
        self.fields["output_format"].choices = [(k, k) for k in sorted(PARSERS)]
        self.fields["image_archive"].choices = [("", "—")] + [(u.sha256, str(u)) for u in uploads]
        self._test_targets = {str(t.pk): t for t in reference_targets()}
        self.fields["test_target"].choices = [("", "your own sequence (below)")] + [
            (
                pk,
                f"{t.source_id} · {t.dataset.name} · {t.rna_class or 'RNA'} · {t.length} nt"
                + (" · alignments" if t.n_alignments else ""),
            )
            for pk, t in self._test_targets.items()
        ]
        if self._test_targets:
            self.fields["test_target"].initial = next(iter(self._test_targets))
        if fixed_name is not None:
            self.fields["name"].disabled = True
            self.fields["name"].initial = fixed_name
        self.spec: PredictorSpec | None = None

    def fieldsets(self) -> list[dict]:
        """The visible fields grouped as in :attr:`FIELDSETS` (a field in none of them goes to the last)."""
        groups = [
            {"key": key, "kinds": kinds, "legend": legend, "fields": [self[n] for n in names]}
            for key, kinds, legend, names in self.FIELDSETS
        ]
        listed = {n for *_, names in self.FIELDSETS for n in names}
        groups[-1]["fields"] += [f for f in self.visible_fields() if f.name not in listed]
        return groups

    @classmethod
    def initial_from_spec(cls, spec: PredictorSpec) -> dict:
        data = spec.as_dict()
        data["argv"] = "\n".join(spec.argv)
        data["input"] = spec.comparative_input or "single"
        data["output_file"] = spec.output_file or ""
        data["endpoint"] = spec.endpoint or ""
        data["image_archive"] = spec.image_archive or ""
        data["upload_window_h"] = spec.upload_window_s / 3600
        data["training_data"] = "\n".join(spec.training_data)
        return {k: v for k, v in data.items() if k in cls.base_fields}

    def clean_name(self) -> str:
        """NFKC, visible characters only, no look-alike of an existing method's name (issue 26,
        :mod:`comparna.owners.names`; the same answer whoever's method it is)."""
        name = normalise_name(self.cleaned_data["name"])
        if self.fields["name"].disabled:  # editing: the method's own name
            return name
        problem = name_problem(name)
        if problem:
            raise forms.ValidationError(problem)
        if name_conflicts(name, user=self.user):
            raise forms.ValidationError(NAME_UNAVAILABLE)
        return name

    def clean_test_sequence(self) -> str:
        seq = "".join(self.cleaned_data["test_sequence"].split()).upper().replace("T", "U")
        if seq and (not seq.isascii() or not seq.isalpha()):
            raise forms.ValidationError("The test sequence may contain letters only.")
        return seq

    def clean_test_target(self):
        """The chosen test target (a :class:`~comparna.models.Target`) or None for the typed sequence."""
        key = self.cleaned_data.get("test_target") or ""
        return self._test_targets.get(key)

    def clean(self) -> dict:
        data = super().clean()
        if self.errors:
            return data
        kind = data["kind"]
        if data.get("test_target") is not None:
            data["test_sequence"] = data["test_target"].sequence
        elif not data.get("test_sequence"):
            self.add_error("test_sequence", "Choose a test target or give a test sequence.")
            return data
        argv: list[str] = []
        if kind != "web":
            try:
                argv = parse_argv(data.get("argv") or "")
            except forms.ValidationError as exc:
                self.add_error("argv", exc)
                return data
            missing = program_problem(argv, kind)
            if missing:
                self.add_error("argv", missing[0].upper() + missing[1:] + ".")
                return data
        if kind == "image" and not data.get("image_archive"):
            self.add_error("archive", "Upload the image archive (or choose one you uploaded before).")
            return data
        comparative = None if data["input"] == "single" else data["input"]
        spec = PredictorSpec(
            name=data["name"].strip(),
            program=data["program"].strip(),
            version=data["version"].strip(),
            argv=tuple(argv),
            input_kind="single" if comparative is None else "alignment",
            comparative_input=comparative,
            output_format=data["output_format"],
            pseudoknots=data["pseudoknots"],
            max_length=data["max_length"],
            time_limit_s=float(data["time_limit_s"]),
            memory_limit_mb=data["memory_limit_mb"],
            citation=data["citation"].strip(),
            url=data["url"].strip(),
            produces_probabilities=data["produces_probabilities"],
            description=data["description"].strip(),
            output_file=(data["output_file"].strip() or None) if kind != "web" else None,
            licence=data["licence"].strip(),
            training_data=tuple(t.strip() for t in (data["training_data"] or "").splitlines() if t.strip()),
            kind=kind,
            image_archive=(data.get("image_archive") or None) if kind == "image" else None,
            endpoint=(data["endpoint"].strip() or None) if kind == "web" else None,
            max_concurrent=data["max_concurrent"],
            requests_per_minute=data["requests_per_minute"],
            retries=data["retries"],
            upload_window_s=round(float(data["upload_window_h"]) * 3600),
        )
        problems = spec.problems()
        if not problems and spec.comparative_input:
            if stored_alignment(data["test_sequence"], spec.comparative_input) is None:
                message = no_alignment_message(spec)
                self.add_error("test_target", message[0].upper() + message[1:] + ".")
                return data
        for problem in problems:
            field = next(
                (f for f, key in (*_EXTRA_PROBLEM_FIELDS, *_PROBLEM_FIELDS) if problem.startswith(key)), None
            )
            if field not in self.fields:
                field = None
            self.add_error(field, problem)
        if not problems:
            self.spec = spec
        return data


class TokenForm(forms.Form):
    name = forms.CharField(max_length=100, help_text="What the token is for, e.g. 'lab server uploads'.")
