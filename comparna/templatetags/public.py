"""Filters for public pages: nothing of the server's file system is shown to visitors.

Error messages and summaries come from programs and import runs that name files on the server (a venv's
interpreter, a temporary folder, the data directory). ``{{ text|public }}`` keeps the message and the file's
own name but drops its folders: ``/srv/var/venvs/mxfold2/bin/python: error`` → ``…/python: error``.
"""

from __future__ import annotations

import re

from django import template

register = template.Library()

# An absolute path with at least one folder, not part of a URL (``https://host/a/b``) or a fraction (``1/2``).
_ABSOLUTE_PATH = re.compile(r"(?<![\w.:/~}-])/(?:[\w.+@%~-]+/)+([\w.+@%~-]*)")


def scrub_paths(text: object) -> str:
    """``text`` with every absolute file path cut to ``…/`` + its last component."""
    return _ABSOLUTE_PATH.sub(lambda m: "…/" + m.group(1), "" if text is None else str(text))


@register.filter(name="public")
def public(text: object) -> str:
    return scrub_paths(text)


# A catalogue program as stored: our wrapper module, then what it runs in parentheses,
# ``predictors.programs.vienna_fold (ViennaRNA RNA module)``.
_WRAPPED_PROGRAM = re.compile(r"^[a-z_][\w]*(?:\.[a-z_]\w*)+\s*\((?P<what>.+)\)\s*$", re.S)


def program_label(program: object) -> str:
    """What a program is, in a reader's words: ``predictors.programs.vienna_fold (ViennaRNA RNA module)`` →
    ``ViennaRNA RNA module``. The module path is how the server runs it; staff see it in the admin."""
    text = "" if program is None else str(program)
    match = _WRAPPED_PROGRAM.match(text)
    return match.group("what") if match else scrub_paths(text)


@register.filter(name="program")
def program(text: object) -> str:
    return program_label(text)


@register.filter(name="status_label")
def status_label(value: object) -> str:
    """A prediction state in words (``too_long`` → ``too long``), never the stored code."""
    from predictors.models import Prediction

    text = "" if value is None else str(value)
    try:
        return str(Prediction.Status(text).label)
    except ValueError:
        return text.replace("_", " ")
