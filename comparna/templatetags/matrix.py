"""The verdict matrix's cells, written in Python: at 100 methods the matrix has 10 000 cells, and the template
language took seconds over them (issue 28). The HTML is the one the template wrote."""

from __future__ import annotations

from django import template
from django.urls import reverse
from django.utils.html import conditional_escape, format_html
from django.utils.safestring import mark_safe

register = template.Library()

_A, _B = 900000001, 900000002  # stand-ins for the two method ids in the comparison address
VERDICT_CLASS = {"+": "v-win", "-": "v-loss", "=": "v-draw"}
EQUAL_MARK = '<span class="eq" title="practically equal (|ΔMCC| < 0.01 with 90 % confidence)">≈</span>'


@register.simple_tag
def matrix_rows(matrix: dict, dataset, subset, definition: str, snapshot) -> str:
    """Every row of the matrix (``<tr>`` … ``</tr>``): the method's name, then one cell per other method.

    Escaping is per character, so each name, value and piece of the address is escaped once and the pieces
    joined (30 000 escapes of the same hundred names took most of the matrix page's time)."""
    pattern = reverse("method-comparison", args=[dataset.slug, subset.slug, definition, _A, _B])
    before, rest = pattern.split(str(_A), 1)
    between, after = rest.split(str(_B), 1)
    before, between = conditional_escape(before), conditional_escape(between)
    after = conditional_escape(after + f"?snapshot={snapshot.pk}")
    escaped: dict = {}

    def esc(value) -> str:
        key = (type(value), value)
        if key not in escaped:
            escaped[key] = conditional_escape(value)
        return escaped[key]

    out = []
    for row in matrix["rows"]:
        head = (
            format_html('<a href="{}">{}</a>', reverse("method-detail", args=[row["pk"]]), row["method"])
            if row["pk"] else conditional_escape(row["method"])
        )
        cells = []
        for c in row["cells"]:
            if c["kind"] == "self":
                cells.append('<td class="self"></td>')
                continue
            value = c["value"]
            css = f"v {VERDICT_CLASS.get(value, 'v-unknown')}" if c["kind"] == "verdict" else "common"
            if c.get("a_pk") and c.get("b_pk"):
                href = f"{before}{esc(str(c['a_pk']))}{between}{esc(str(c['b_pk']))}{after}"
                title = f"{esc(c['a'])} vs {esc(c['b'])}"
                if c["kind"] == "common":
                    title += f": {esc(value)} common targets"
                shown = "−" if value == "-" else esc(value)
                mark = EQUAL_MARK if c.get("equivalence") == "practically equal" else ""
                inner = f'<a href="{href}" title="{title}">{shown}{mark}</a>'
            else:
                inner = esc(value)
            cells.append(f'<td class="{css}">{inner}</td>')
        out.append(f'\n    <tr><th scope="row">{head}</th>\n    {"".join(cells)}\n    </tr>')
    return mark_safe("".join(out))  # noqa: S308 - every value above is escaped
