"""The verdict matrix's rows are written in Python (10 000 cells at 100 methods took the template language
seconds, issue 28): the HTML is exactly what the template wrote."""

from __future__ import annotations

import pytest
from django.template import Context, Template
from django.urls import reverse

from comparna.services.pages.rankings import pairwise_matrix
from comparna.services.rankings import rank_subset
from comparna.templatetags.matrix import matrix_rows
from predictors.models import Method
from tests.django.test_ranking_honesty import world  # noqa: F401 - the fixture

pytestmark = pytest.mark.django_db

#: The rows as the matrix template wrote them before.
TEMPLATE_ROWS = """{% for row in matrix.rows %}
    <tr><th scope="row">{% if row.pk %}<a href="{% url 'method-detail' row.pk %}">{{ row.method }}</a>{% else %}{{ row.method }}{% endif %}</th>
    {% for c in row.cells %}{% if c.kind == "self" %}<td class="self"></td>{% else %}<td class="{% if c.kind == 'verdict' %}v {% if c.value == '+' %}v-win{% elif c.value == '-' %}v-loss{% elif c.value == '=' %}v-draw{% else %}v-unknown{% endif %}{% else %}common{% endif %}">{% if c.a_pk and c.b_pk %}<a href="{% url 'method-comparison' dataset.slug subset.slug definition c.a_pk c.b_pk %}?snapshot={{ snapshot.pk }}" title="{{ c.a }} vs {{ c.b }}{% if c.kind == 'common' %}: {{ c.value }} common targets{% endif %}">{% if c.value == '-' %}−{% else %}{{ c.value }}{% endif %}{% if c.equivalence == "practically equal" %}<span class="eq" title="practically equal (|ΔMCC| < 0.01 with 90 % confidence)">≈</span>{% endif %}</a>{% else %}{{ c.value }}{% endif %}</td>{% endif %}{% endfor %}
    </tr>{% endfor %}"""  # noqa: E501 - the template's own lines


def test_matrix_rows_are_the_templates(client, world):  # noqa: F811
    snapshot, _ = rank_subset(subset=world["all"], definition="extended")
    matrix = pairwise_matrix(snapshot)
    # a name that needs escaping, a practically equal pair and a method without a page
    matrix["rows"][0]["method"] = matrix["rows"][0]["method"] + " <&>"
    for cell in matrix["rows"][1]["cells"]:
        if cell["kind"] == "verdict":
            cell["equivalence"] = "practically equal"
    matrix["rows"][-1]["pk"] = None
    context = {"matrix": matrix, "dataset": snapshot.dataset, "subset": snapshot.subset,
               "definition": "extended", "snapshot": snapshot}
    expected = Template(TEMPLATE_ROWS).render(Context(context))
    assert matrix_rows(**context) == expected
    assert expected.count("<td") == len(matrix["rows"]) ** 2
    page = client.get(reverse("ranking-matrix", args=[snapshot.dataset.slug, "all", "extended"]))
    assert page.status_code == 200
    beta = Method.objects.get(name="Beta")
    assert f'href="{reverse("method-detail", args=[beta.pk])}"' in page.content.decode()
