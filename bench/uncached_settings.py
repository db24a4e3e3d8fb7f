"""Django settings of bench_load's naive baseline: CompaRNA's settings with the page cache switched off.

Every request then computes its page from the database (rankings, confidence intervals, serialisation),
as a site without the snapshot cache would.
"""

from __future__ import annotations

from comparna.settings import *  # noqa: F403 - the production settings, one change below

CACHES = {"default": {"BACKEND": "django.core.cache.backends.dummy.DummyCache"}}
