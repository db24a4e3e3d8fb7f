"""A web process loads the URLconf, the page modules (SciPy) and Plotly's template at start (comparna.wsgi),
not on its first request (issue 28: the first home page of a process took seconds)."""

from __future__ import annotations

import sys

from django.conf import settings

from comparna.services.pages import figures
from comparna.startup import warm_up


def test_warm_up_loads_what_the_first_request_paid_for():
    warm_up()
    assert settings.ROOT_URLCONF in sys.modules
    assert "scipy.stats" in sys.modules and "comparna.services.pages.common" in sys.modules
    assert "plotly_white" in figures._TEMPLATES


def test_the_wsgi_module_warms_up():
    import comparna.wsgi

    assert callable(comparna.wsgi.application)
    assert "warm_up()" in open(comparna.wsgi.__file__).read()
