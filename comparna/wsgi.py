"""WSGI entry point (gunicorn comparna.wsgi)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "comparna.settings")
application = get_wsgi_application()

# loaded at start (every gunicorn worker imports this module), not by the first request of the process
from comparna.startup import warm_up  # noqa: E402

warm_up()
