"""The snapshot page's "Compare two methods → Download CSV" form works without script: its action is a URL
that redirects to the pair CSV (the site's CSP blocks the inline handler it used to have), and no template of
the project carries an inline handler or a ``javascript:`` URL."""

from __future__ import annotations

import csv
import io
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tests.django.test_snapshot_views import body, snapshot  # noqa: F401 - the fixture

REPO = Path(__file__).resolve().parents[2]
INLINE = re.compile(r"""\son[a-z]+\s*=|javascript:""", re.IGNORECASE)


class _Form(HTMLParser):
    """The action and the selected value of each select of the form ``#pair-picker``."""

    def __init__(self):
        super().__init__()
        self.action, self.values, self._in, self._select, self._first = None, {}, False, None, {}

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "form" and a.get("id") == "pair-picker":
            self.action, self._in = a.get("action"), True
        elif self._in and tag == "select":
            self._select = a["name"]
        elif self._in and tag == "option" and self._select:
            self._pending = ("selected" in a, a.get("value"))

    def handle_data(self, data):
        if self._in and self._select and getattr(self, "_pending", None):
            selected, value = self._pending
            value = data.strip() if value is None else value
            self._first.setdefault(self._select, value)
            if selected:
                self.values[self._select] = value
            self._pending = None

    def handle_endtag(self, tag):
        if tag == "form":
            self._in = False
        elif tag == "select":
            self.values.setdefault(self._select, self._first.get(self._select, ""))
            self._select = None


@pytest.mark.django_db
def test_the_compare_form_downloads_its_csv_without_script(client, snapshot):  # noqa: F811
    html = client.get(f"/snapshots/snapset/{snapshot.number}/").content.decode()
    assert not INLINE.search(html), INLINE.search(html)
    form = _Form()
    form.feed(html)
    assert form.action == "/snapshots/snapset/compare/" and set(form.values) == {"a", "b", "subset"}
    assert form.values["a"] != form.values["b"] and form.values["subset"] == ""
    response = client.get(form.action, form.values)
    assert response.status_code == 302
    assert response["Location"] == f"/snapshots/snapset/compare/{form.values['a']}/{form.values['b']}.csv"
    download = client.get(response["Location"])
    assert download.status_code == 200 and download["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(body(download).decode())))
    assert rows and {"target", "a_tp", "b_tp"} <= set(rows[0])
    # a subset is carried over; a method name with brackets is quoted in the URL and found again
    narrowed = client.get(form.action, {"a": "Alpha", "b": "Gamma(seed)", "subset": "ext"})
    assert narrowed.status_code == 302 and narrowed["Location"].endswith(".csv?subset=ext")
    assert len(list(csv.DictReader(io.StringIO(body(client.get(narrowed["Location"])).decode())))) == 7
    # unknown names or subsets are 404s, not server errors
    assert client.get(form.action, {"a": "Alpha", "b": "Nobody"}).status_code == 404
    assert client.get(form.action, {"a": "Alpha", "b": "Beta", "subset": "nope"}).status_code == 404
    assert client.get(form.action).status_code == 404


def test_no_template_has_an_inline_handler_or_script():
    found = []
    for path in [*REPO.glob("templates/**/*.html"), *REPO.glob("comparna/**/templates/**/*.html")]:
        text = path.read_text()
        found += [f"{path}: {m.group()}" for m in INLINE.finditer(text)]
        # a <script> is a file (src=) or data (type="application/json"), never inline code
        for tag in re.findall(r"<script\b[^>]*>", text):
            if "src=" not in tag and 'type="application/json"' not in tag:
                found.append(f"{path}: {tag}")
    assert found == []
