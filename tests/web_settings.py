"""comparna.settings plus the web/API settings proposed to the lead (issue 5), for test runs until merged.

Use with ``DJANGO_SETTINGS_MODULE=tests.web_settings``. Everything here is idempotent, so it stays harmless
once the same lines are in comparna/settings.py.
"""

# ---- begin block for comparna/settings.py ---------------------------------------------------------------
import os as _os  # noqa: E402
from pathlib import Path as _Path  # noqa: E402

import plotly as _plotly  # noqa: E402

from comparna.settings import *  # noqa: F403
from comparna.settings import INSTALLED_APPS, STATICFILES_DIRS

for _app in ("rest_framework", "drf_spectacular", "drf_spectacular_sidecar"):
    if _app not in INSTALLED_APPS:
        INSTALLED_APPS.append(_app)

# plotly.js from the plotly package (no CDN: the site works offline), served as static/plotly/plotly.min.js
_PLOTLY_JS_DIR = str(_Path(_plotly.__file__).parent / "package_data")
if not any(isinstance(d, tuple) and d[0] == "plotly" for d in STATICFILES_DIRS):
    STATICFILES_DIRS.append(("plotly", _PLOTLY_JS_DIR))

REST_FRAMEWORK = {
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.AllowAny"],
    "DEFAULT_RENDERER_CLASSES": [
        "rest_framework.renderers.JSONRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
    ],
}
SPECTACULAR_SETTINGS = {
    "TITLE": "CompaRNA API",
    "DESCRIPTION": "Read-only CompaRNA datasets, targets, methods, predictions, scores and rankings.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
}
# Rendered pages and serialised ranking snapshots are cached (keys carry the immutable snapshot's pk).
# COMPARNA_CACHE_URL=redis://host:port/1 shares the cache between gunicorn workers; default: per process.
_CACHE_URL = _os.environ.get("COMPARNA_CACHE_URL", "")
CACHES = {
    "default": (
        {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": _CACHE_URL}
        if _CACHE_URL.startswith("redis")
        else {
            "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
            "LOCATION": "comparna",
            "OPTIONS": {"MAX_ENTRIES": 5000},
        }
    )
}
# ---- end block ------------------------------------------------------------------------------------------
