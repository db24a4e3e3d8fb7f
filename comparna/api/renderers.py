"""The public API's browsable page."""

from __future__ import annotations

import re

from django.utils.html import escape, urlize
from django.utils.safestring import mark_safe
from rest_framework.renderers import BrowsableAPIRenderer

#: A JSON string in the page's indented JSON.
JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
LINK_MARK = re.compile("\x00([0-9]+)\x00")
#: Stands for the JSON in the rendered template (no ".", "@" or ":": the template's ``urlize`` leaves it).
PLACEHOLDER = "comparna-browsable-api-content-placeholder"
_CONTENT = "comparna_linked_content"


def linked(text: str) -> str:
    """``urlize(text)`` of the page's JSON as DRF's template writes it (escaped, each address a link), with
    only the JSON strings that may hold one passed to ``urlize`` and the rest escaped at once: Django's
    ``urlize`` of a whole list of rankings (1.4 MB of indented JSON, thousands of numbers it examines word by
    word) took 0.13-0.2 s. A link is kept aside under a NUL mark (JSON text holds no raw NUL)."""
    links: list[str] = []

    def one(match: re.Match) -> str:
        inner = match.group()[1:-1]
        if "." in inner or "@" in inner or ":" in inner:
            html = urlize(inner, nofollow=True, autoescape=True)
            if "<a " in html:
                links.append(html)
                return f'"\x00{len(links) - 1}\x00"'
        return match.group()

    marked = escape(JSON_STRING.sub(one, text))
    return mark_safe(LINK_MARK.sub(lambda m: links[int(m.group(1))], marked) if links else marked)


class PublicBrowsableAPIRenderer(BrowsableAPIRenderer):
    """DRF's browsable page of the read-only endpoints, without a CSRF token (nor so a CSRF cookie) for a
    visitor who is not signed in (``templates/comparna/api/browsable.html``): a page that sets no cookie is
    kept by the public page cache (:class:`comparna.middleware.PublicPageCacheMiddleware`), so a browser's
    second visit is a cache hit like any other public page, not a whole new rendering. Its JSON is linked by
    :func:`linked` (the same HTML as the template's ``urlize``, a fraction of the time)."""

    template = "comparna/api/browsable.html"

    def get_context(self, data, accepted_media_type, renderer_context):
        context = super().get_context(data, accepted_media_type, renderer_context)
        renderer_context[_CONTENT] = linked(context["content"])
        context["content"] = PLACEHOLDER
        return context

    def render(self, data, accepted_media_type=None, renderer_context=None):
        renderer_context = renderer_context if renderer_context is not None else {}
        page = super().render(data, accepted_media_type, renderer_context)
        return page.replace(PLACEHOLDER, renderer_context.pop(_CONTENT, ""), 1)
