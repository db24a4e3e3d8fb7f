"""Site polish: styled 404/500 pages, figures with rounded and thinned data, no file paths on public pages."""

from __future__ import annotations

import json
import re

import pytest
from django.test import RequestFactory
from django.views.defaults import server_error

from comparna.services.pages.figures import PrLine, pr_curve_figure, thinned
from tests.web_data import site_fixture  # noqa: F401 - registers the module-scoped `site` fixture

pytestmark = pytest.mark.django_db


def test_404_is_the_site_page(client, site):
    response = client.get("/no/such/page/")
    assert response.status_code == 404
    page = response.content.decode()
    assert 'id="error-404"' in page and 'class="site"' in page and "<nav>" in page
    response = client.get("/targets/999999999/")
    assert response.status_code == 404 and 'id="error-404"' in response.content.decode()


def test_500_page_is_styled_and_needs_no_context():
    response = server_error(RequestFactory().get("/"))
    page = response.content.decode()
    assert response.status_code == 500
    assert 'id="error-500"' in page and "site.css" in page and "Traceback" not in page


def test_pr_curve_embeds_rounded_thinned_points():
    n = 100_000  # a pooled curve over all candidate pairs has this many thresholds
    recall = [k / n for k in range(n + 1)]
    precision = [1 - 0.5 * r * r for r in recall]
    text = pr_curve_figure([PrLine("set (extended)", recall, precision, 0.8333333333333334, (0.61, 0.72))])
    figure = json.loads(text)
    xs, ys = figure["data"][0]["x"], figure["data"][0]["y"]
    assert len(text) < 30_000
    assert xs[0] == 0 and xs[-1] == 1 and ys[-1] == 0.5
    assert 300 < len(xs) <= 1000
    # the drawn line is the same: every dropped point lies within 0.002 of the polyline kept
    for k in range(0, n + 1, 997):
        r = recall[k]
        assert abs(precision[k] - float(_interp(r, xs, ys))) < 0.002
    data = json.dumps(figure["data"])
    assert not re.search(r"\d\.\d{5,}", data), "unrounded numbers in the figure's data"


def _interp(x, xs, ys):
    import numpy as np

    return np.interp(x, xs, ys)


def test_thinning_keeps_steps_and_ends():
    xs, ys = thinned([0.0, 0.1, 0.1, 0.1000001, 1.0], [1.0, 1.0, 0.5, 0.5, 0.2])
    assert xs == [0.0, 0.1, 0.1, 1.0] and ys == [1.0, 1.0, 0.5, 0.2]
