"""The JSON request parser of every API view: DRF's, answering 400 for nesting too deep to decode.

DRF's ``JSONParser`` turns a ``ValueError`` into a 400 but lets the ``RecursionError`` of a body like
``[[[[...]]]]`` (a thousand levels) escape as a 500 (issue 26: the owners' upload, the callback and the blind
submission take JSON from method owners).
"""

from __future__ import annotations

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser


class BoundedJSONParser(JSONParser):
    """``JSONParser`` whose too-deep bodies are a 400 with the reason, like any other malformed JSON."""

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError("JSON parse error - nested too deeply") from None
