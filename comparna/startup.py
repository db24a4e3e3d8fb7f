"""What a web process loads once at start, not on its first request (issue 28: the first request of a process
took seconds): the URLconf and the views behind it, the page modules with SciPy's statistics, and Plotly's
page template."""

from __future__ import annotations


def warm_up() -> None:
    """Import the URLconf (every view) and the page modules (``scipy.stats``); build Plotly's template."""
    from importlib import import_module

    from django.conf import settings
    from django.urls import get_resolver

    get_resolver().url_patterns  # noqa: B018 - imports the URLconf and every view module
    import_module(settings.ROOT_URLCONF)
    import_module("comparna.services.pages.common")  # the page cache's key reads it (scipy.stats)
    from comparna.services.pages.figures import template_json

    template_json("plotly_white")
