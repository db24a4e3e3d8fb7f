"""Settings read from the environment.

Defaults give the embedded set-up (SQLite and a filesystem Celery broker under ``COMPARNA_DATA_DIR``);
``DATABASE_URL`` and ``CELERY_BROKER_URL`` switch the same code to PostgreSQL and Redis.
"""

from __future__ import annotations

import os
from pathlib import Path

import dj_database_url

BASE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = Path(os.environ.get("COMPARNA_DATA_DIR", BASE_DIR / "var")).resolve()
# The SQLite file, broker folders, logs, downloads and the generated secret key live here: private to the
# service's user (the predictor sandbox never sees it either, see predictors/core/runners.py).
DATA_DIR.mkdir(mode=0o700, parents=True, exist_ok=True)
if DATA_DIR.stat().st_uid == os.geteuid() and DATA_DIR.stat().st_mode & 0o077:
    DATA_DIR.chmod(0o700)


def _env_bool(name: str, default: bool) -> bool:
    return os.environ.get(name, str(default)).lower() in {"1", "true", "yes", "on"}


DEBUG = _env_bool("DJANGO_DEBUG", False)
ALLOWED_HOSTS = os.environ.get("DJANGO_ALLOWED_HOSTS", "127.0.0.1,localhost,[::1],testserver").split(",")

from comparna import secret_key as _secret_key  # noqa: E402

if os.environ.get("DJANGO_SECRET_KEY"):
    SECRET_KEY = os.environ["DJANGO_SECRET_KEY"]
    _weak = _secret_key.weakness(SECRET_KEY)
    if _weak and not DEBUG:
        from django.core.exceptions import ImproperlyConfigured

        raise ImproperlyConfigured(
            f"DJANGO_SECRET_KEY is not safe to use ({_weak}). Set a random value, e.g. "
            "python3 -c 'import secrets; print(secrets.token_urlsafe(64))', or unset it to let the "
            "embedded run generate one into the data directory."
        )
else:
    # The embedded run: a random key of its own, kept in the (0700) data directory.
    SECRET_KEY = _secret_key.load_or_create(DATA_DIR / "secret_key")

# --- HTTP security ---------------------------------------------------------------------------------
# Cookies are never readable by scripts; behind TLS (COMPARNA_TLS=1: a proxy terminates HTTPS and sets
# X-Forwarded-Proto) they are Secure, plain HTTP is redirected and HSTS is sent.
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = CSRF_COOKIE_SAMESITE = "Lax"
BEHIND_TLS = _env_bool("COMPARNA_TLS", False)
if BEHIND_TLS:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = True
    SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = int(os.environ.get("COMPARNA_HSTS_SECONDS", str(365 * 24 * 3600)))
    SECURE_HSTS_INCLUDE_SUBDOMAINS = _env_bool("COMPARNA_HSTS_INCLUDE_SUBDOMAINS", True)
    SECURE_HSTS_PRELOAD = _env_bool("COMPARNA_HSTS_PRELOAD", True)
CSRF_TRUSTED_ORIGINS = [o for o in os.environ.get("DJANGO_CSRF_TRUSTED_ORIGINS", "").split(",") if o]
# Content Security Policy (comparna.middleware): scripts only from our own static files (plotly.js, the
# site's script, Swagger UI's), no inline or eval'd script. Inline styles stay allowed: plotly.js styles
# the charts it draws through style attributes.
CONTENT_SECURITY_POLICY = os.environ.get(
    "COMPARNA_CSP",
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; "
    "font-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'self'; form-action 'self'; "
    "frame-ancestors 'none'",
)

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "comparna",
    "comparna.snapshots",
    "comparna.blind",
    "comparna.owners",
    "comparna.ops",
    "comparna.tallies",
    "comparna.advice",
    "predictors",
    "ingest",
]

MIDDLEWARE = [
    # /healthz, /readyz, /metrics for probes on the internal address (no host check, no HTTPS redirect)
    "comparna.ops.middleware.OpsEndpointsMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # gzip for anonymous public responses only (BREACH: never a page with a CSRF token or a signed-in one)
    "comparna.middleware.PublicGZipMiddleware",
    "comparna.middleware.ContentSecurityPolicyMiddleware",
    "comparna.middleware.RejectNulMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "comparna.middleware.PublicPageCacheMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "comparna.urls"
WSGI_APPLICATION = "comparna.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL", f"sqlite:///{DATA_DIR / 'comparna.sqlite3'}"),
        conn_max_age=int(os.environ.get("DATABASE_CONN_MAX_AGE", "0")),
    )
}
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    # Workers, beat and the web server share one SQLite file: wait for locks instead of failing.
    DATABASES["default"].setdefault("OPTIONS", {})["timeout"] = 30
    # A transaction takes the write lock when it begins: one that read first and then wrote would otherwise
    # fail at once with "database is locked" (SQLite cannot wait there without risking a deadlock), which
    # lost the run of a prediction whose worker raced another writer (seen with 2 workers in `make run`).
    DATABASES["default"]["OPTIONS"]["transaction_mode"] = "IMMEDIATE"
    # Write-ahead logging: a long read (a snapshot being written, a ranking reading its scores) no longer
    # holds back every worker's commit, as the rollback journal's shared lock did (in `make run` the
    # predictions per minute fell from hundreds to tens while a snapshot was built).
    DATABASES["default"]["OPTIONS"]["init_command"] = "PRAGMA journal_mode=WAL;"

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(os.environ.get("COMPARNA_STATIC_ROOT", BASE_DIR / "staticfiles"))
# collectstatic writes content-hashed names with .gz/.br copies (comparna/staticfiles.py); WhiteNoise serves
# the smallest encoding the browser accepts, hashed names cached for a year ("immutable").
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "comparna.staticfiles.SiteStaticStorage"},
}
WHITENOISE_KEEP_ONLY_HASHED_FILES = True
# plotly.js from the plotly package (no CDN: the site works offline), served as static/plotly/plotly.min.js
STATICFILES_FINDERS = [
    "django.contrib.staticfiles.finders.FileSystemFinder",
    "django.contrib.staticfiles.finders.AppDirectoriesFinder",
    "comparna.staticfiles.PlotlyFinder",
]

INSTALLED_APPS += ["rest_framework", "drf_spectacular", "drf_spectacular_sidecar"]
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
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "DESCRIPTION": "Read-only CompaRNA datasets, targets, methods, predictions, scores and rankings.",
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
}
# Immutable ranking snapshots are cached by id; production shares one Redis cache between web workers.
_CACHE_URL = os.environ.get("COMPARNA_CACHE_URL", "")
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
# Whole public pages for anonymous visitors, under the data version every background refresh replaces
# (comparna.middleware.PublicPageCacheMiddleware); on by default with the shared Redis cache only.
PAGE_CACHE_S = int(os.environ.get("COMPARNA_PAGE_CACHE_S", "60" if _CACHE_URL.startswith("redis") else "0"))

# --- Celery -------------------------------------------------------------------------------------
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "filesystem://")
if CELERY_BROKER_URL.startswith("filesystem://"):
    _queue_dir = DATA_DIR / "broker"
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_queue_dir / "queue"),
        "data_folder_out": str(_queue_dir / "queue"),
        "processed_folder": str(_queue_dir / "processed"),
        "control_folder": str(_queue_dir / "control"),  # default: ./control
        "store_processed": False,
        # Kombu polls a filesystem queue (no socket to wait on): every second by default, which let a worker
        # take at most one message a second however short its tasks (the folder stays small: the dispatch
        # window, predictors/scheduling.py, keeps at most ~1000 predictions in it).
        "polling_interval": float(os.environ.get("COMPARNA_BROKER_POLL_S", "0.1")),
    }
    for _folder in ("queue", "processed", "control"):
        (_queue_dir / _folder).mkdir(parents=True, exist_ok=True)
CELERY_RESULT_BACKEND = os.environ.get("CELERY_RESULT_BACKEND") or None
CELERY_TASK_DEFAULT_QUEUE = "default"
CELERY_TASK_ROUTES = {
    "predictors.tasks.run_prediction_task": {"queue": "predict"},
    "predictors.tasks.run_test_task": {"queue": "testrun"},
}
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_TIME_LIMIT = int(os.environ.get("CELERY_TASK_TIME_LIMIT", "3600"))
CELERY_TASK_SOFT_TIME_LIMIT = CELERY_TASK_TIME_LIMIT - 60
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BEAT_SCHEDULE_FILENAME = str(DATA_DIR / "celerybeat-schedule")
# Beat records its heartbeat (its last tick) for /readyz (comparna/ops/heartbeats.py).
CELERY_BEAT_SCHEDULER = "comparna.ops.heartbeats:HeartbeatScheduler"
CELERY_BEAT_SCHEDULE: dict = {}  # filled from <app>/scheduled.py in comparna/scheduled.py
CELERY_TIMEZONE = "UTC"

# --- CompaRNA -----------------------------------------------------------------------------------
# Shipped with the repository (data/README.md: provenance, licence, sha256).
RNASTRAND_ARCHIVE = Path(
    os.environ.get("COMPARNA_RNASTRAND", BASE_DIR / "data" / "rna_strand_v2.0_bpseq.tar.gz")
)
CDHIT_EST = os.environ.get("COMPARNA_CDHIT_EST", "cd-hit-est")
CDHIT_EST_2D = os.environ.get("COMPARNA_CDHIT_EST_2D", "cd-hit-est-2d")
SNAPSHOT_DIR = Path(os.environ.get("COMPARNA_SNAPSHOT_DIR", DATA_DIR / "snapshots"))
RANKING_SEED = int(os.environ.get("COMPARNA_RANKING_SEED", "20130301"))

# One logging config: JSON lines (comparna/ops/logs.py, with the prediction/target/method ids passed as
# ``extra``) unless COMPARNA_LOG_FORMAT=text; Celery's handlers get the same formatter (comparna/celery.py).
LOG_FORMAT = os.environ.get("COMPARNA_LOG_FORMAT", "json").lower()
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "json": {"()": "comparna.ops.logs.JsonFormatter"},
        "text": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"},
    },
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": "json" if LOG_FORMAT == "json" else "text"}
    },
    "root": {"handlers": ["console"], "level": os.environ.get("COMPARNA_LOG_LEVEL", "INFO")},
}

from comparna.scheduled import collect_schedules  # noqa: E402

CELERY_BEAT_SCHEDULE = collect_schedules()
# Admin test runs (queue "testrun", consumed by the predict workers): wall-clock cap and when a test run
# that no worker finished is shown as lost.
TEST_RUN_TIME_LIMIT_S = min(float(os.environ.get("COMPARNA_TEST_RUN_LIMIT_S", "60")), 600.0)
# The advisor (/advice/, issue 40): requests per address per window, per hour in all; runs waiting at most.
ADVICE_PER_ADDRESS = int(os.environ.get("COMPARNA_ADVICE_PER_ADDRESS", "10"))
ADVICE_PER_ADDRESS_WINDOW_S = int(os.environ.get("COMPARNA_ADVICE_PER_ADDRESS_WINDOW_S", "3600"))
ADVICE_PER_HOUR = int(os.environ.get("COMPARNA_ADVICE_PER_HOUR", "300"))
ADVICE_MAX_OPEN_RUNS = int(os.environ.get("COMPARNA_ADVICE_MAX_OPEN_RUNS", "60"))
TEST_RUN_EXPIRE_S = float(os.environ.get("COMPARNA_TEST_RUN_EXPIRE_S", "900"))
# Queued predictions older than this are sent to the broker again (a lost message after a broker restart).
PREDICTION_RESEND_AFTER_S = float(os.environ.get("COMPARNA_RESEND_AFTER_S", str(6 * 3600)))
# Batched predictions (predictors.execution): the time a batch may hold a worker (no target starts after it)
# and the most targets it takes.
PREDICTION_BATCH_S = float(os.environ.get("COMPARNA_BATCH_S", "60"))
PREDICTION_BATCH_MAX = max(1, int(os.environ.get("COMPARNA_BATCH_MAX", "200")))
# ... and at most this share of the estimated time of the method version's queued predictions (so that the
# other workers get theirs), but not under PREDICTION_BATCH_MIN_S seconds (a launch's fixed cost).
PREDICTION_BATCH_SHARE = float(os.environ.get("COMPARNA_BATCH_SHARE", "0.25"))
# Measured: a launch's fixed cost (sandbox, interpreter, imports, claiming and storing) is ~0.5-0.7 s, so with
# a 1 s floor a fast method's small backlog took three launches and RNAfold-MFE ran at 2x its bare compute
# on 90 targets; with 5 s it is about a tenth of the smallest batch, and the other worker idles 5 s at most.
PREDICTION_BATCH_MIN_S = float(os.environ.get("COMPARNA_BATCH_MIN_S", "5"))
# Queued predictions are sent in schedule order (predictors/scheduling.py) through a window: at most this many
# sent and not yet started; the rest wait in the database, so a broker never holds the whole backlog.
PREDICTION_DISPATCH_WINDOW = int(os.environ.get("COMPARNA_DISPATCH_WINDOW", "1000"))
# A sent prediction still queued after this long no longer counts against the window (slow or lost message).
PREDICTION_DISPATCH_STALE_S = float(os.environ.get("COMPARNA_DISPATCH_STALE_S", "900"))

# --- PDB ingest ------------------------------------------------------------------------------------
RCSB_SEARCH_URL = os.environ.get("COMPARNA_RCSB_SEARCH_URL", "https://search.rcsb.org/rcsbsearch/v2/query")
RCSB_DOWNLOAD_URL = os.environ.get("COMPARNA_RCSB_DOWNLOAD_URL", "https://files.rcsb.org/download")
RCSB_TIMEOUT_S = float(os.environ.get("COMPARNA_RCSB_TIMEOUT_S", "60"))
RCSB_RETRIES = int(os.environ.get("COMPARNA_RCSB_RETRIES", "4"))
PDB_DOWNLOAD_DIR = Path(os.environ.get("COMPARNA_PDB_DIR", DATA_DIR / "pdb"))
# Chains released before this date form the novelty reference set; later ones are benchmarked.
import datetime as _dt  # noqa: E402

# Planned maximum size of the PDB set for the group-sequential boundary (information fraction = n / this).
PDB_PLANNED_TARGETS = int(os.environ.get("COMPARNA_PDB_PLANNED_TARGETS", "2000"))
PDB_BENCHMARK_START = _dt.date.fromisoformat(os.environ.get("COMPARNA_PDB_BENCHMARK_START", "2024-01-01"))

# --- Blind track (comparna/blind) ----------------------------------------------------------------------
# The clock of every weekly deadline and of the PDB poll window (comparna/clock.py): unset = real UTC time;
# "<start>@<unix origin>[x<rate>]" = a time-travel clock for rehearsals and integration tests.
CLOCK = os.environ.get("COMPARNA_CLOCK", "")
# Where the Saturday pre-release sequence files are read (new_release_structure_sequence[_canonical].tsv).
WWPDB_FILES_URL = os.environ.get("COMPARNA_WWPDB_FILES_URL", "https://www.wwpdb.org/files")
# The RCSB Data API (holdings status of entries announced but not found after the release).
RCSB_DATA_URL = os.environ.get("COMPARNA_RCSB_DATA_URL", "https://data.rcsb.org/rest/v1")
# Deadline = commitment time, this long before the Wednesday 00:00 UTC release (default Tuesday 22:00 UTC).
BLIND_DEADLINE_BEFORE_RELEASE_S = float(os.environ.get("COMPARNA_BLIND_DEADLINE_BEFORE_RELEASE_S", "7200"))
# Retries of the pre-release poll while the file is missing, stale or malformed: base * 2^n, capped.
BLIND_RETRY_BASE_S = float(os.environ.get("COMPARNA_BLIND_RETRY_BASE_S", "600"))
BLIND_RETRY_MAX_S = float(os.environ.get("COMPARNA_BLIND_RETRY_MAX_S", "3600"))
# An announced entry still on hold this long after its release date is closed.
BLIND_HOLD_GRACE_DAYS = int(os.environ.get("COMPARNA_BLIND_HOLD_GRACE_DAYS", "28"))
# A released chain links to a blind target at this sequence identity (over its observed residues) or more.
BLIND_MIN_IDENTITY = float(os.environ.get("COMPARNA_BLIND_MIN_IDENTITY", "0.95"))
# Planned maximum of blind targets for the group-sequential boundary of the cumulative ranking.
BLIND_PLANNED_TARGETS = int(os.environ.get("COMPARNA_BLIND_PLANNED_TARGETS", "500"))

# --- Rfam --------------------------------------------------------------------------------------------
# A prepared Rfam library (Rfam.cm pressed + Rfam.seed, see ingest/rfam/library.py); by default the real
# families shipped by Debian's infernal-doc, assembled under var/rfam on first use.
RFAM_LIBRARY = os.environ.get("COMPARNA_RFAM_LIBRARY") or None

# --- Method owners (issue 17: comparna/owners) ------------------------------------------------------
# E-mail: confirmation links, approval notices and digests. The console backend by default (the embedded
# run prints mails to the log); deployments set COMPARNA_EMAIL_BACKEND=smtp and EMAIL_HOST & co.; the tests
# use the locmem (Django tests) or file backend (the stack).
_EMAIL_BACKENDS = {
    "console": "django.core.mail.backends.console.EmailBackend",
    "smtp": "django.core.mail.backends.smtp.EmailBackend",
    "file": "django.core.mail.backends.filebased.EmailBackend",
    "locmem": "django.core.mail.backends.locmem.EmailBackend",
}
EMAIL_BACKEND = _EMAIL_BACKENDS.get(
    os.environ.get("COMPARNA_EMAIL_BACKEND", "console"), os.environ.get("COMPARNA_EMAIL_BACKEND", "")
)
EMAIL_FILE_PATH = os.environ.get("COMPARNA_EMAIL_FILE_PATH", str(DATA_DIR / "mail"))
EMAIL_HOST = os.environ.get("EMAIL_HOST", "localhost")
EMAIL_PORT = int(os.environ.get("EMAIL_PORT", "25"))
EMAIL_HOST_USER = os.environ.get("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = os.environ.get("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = _env_bool("EMAIL_USE_TLS", False)
DEFAULT_FROM_EMAIL = os.environ.get("COMPARNA_FROM_EMAIL", "CompaRNA <comparna@localhost>")
# Absolute base URL of the site, for links in e-mails and web-service callbacks.
SITE_URL = os.environ.get("COMPARNA_SITE_URL", "http://127.0.0.1:8000")
LOGIN_URL = "owner-login"
LOGIN_REDIRECT_URL = "owner-home"
LOGOUT_REDIRECT_URL = "home"
# E-mail confirmation links stay valid this long.
OWNER_CONFIRM_MAX_AGE_S = int(os.environ.get("COMPARNA_CONFIRM_MAX_AGE_S", str(3 * 24 * 3600)))
# Sign-in throttling (comparna.owners.throttle): failures counted per account (the name as sign-in
# normalises it) and per client address in the database (shared by every web process); either limit reached
# locks those sign-ins for LOGIN_LOCKOUT_S. Behind a reverse proxy, list its addresses or networks in
# COMPARNA_TRUSTED_PROXIES (comma-separated, e.g. 172.30.0.1 or 10.0.0.0/8) so the client's address is read
# from X-Forwarded-For (else every client would share the proxy's address and its count).
LOGIN_FAILURES_PER_ACCOUNT = int(os.environ.get("COMPARNA_LOGIN_FAILURES_PER_ACCOUNT", "5"))
LOGIN_FAILURES_PER_ADDRESS = int(os.environ.get("COMPARNA_LOGIN_FAILURES_PER_ADDRESS", "20"))
LOGIN_LOCKOUT_S = int(os.environ.get("COMPARNA_LOGIN_LOCKOUT_S", "900"))
TRUSTED_PROXIES = [a.strip() for a in os.environ.get("COMPARNA_TRUSTED_PROXIES", "").split(",") if a.strip()]
# Sign-ups (each mails an address) per client address within SIGNUP_WINDOW_S; accounts whose address is not
# confirmed within OWNER_CONFIRM_MAX_AGE_S are deleted by the owners' periodic task (issue 36).
SIGNUPS_PER_ADDRESS = int(os.environ.get("COMPARNA_SIGNUPS_PER_ADDRESS", "5"))
SIGNUP_WINDOW_S = int(os.environ.get("COMPARNA_SIGNUP_WINDOW_S", "3600"))
# Owners' passwords (their code runs on our machines): Django's validators, on sign-up and password reset.
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator", "OPTIONS": {"min_length": 10}},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
PASSWORD_RESET_TIMEOUT = int(os.environ.get("COMPARNA_PASSWORD_RESET_TIMEOUT_S", str(3 * 24 * 3600)))
# Uploaded container image archives: size cap and cap of everything decompressed from one. The checked
# copies are kept in COMPARNA_IMAGES_DIR (default <data dir>/images; predictors.core.owner_image), which
# every worker host must share; predictors never see it.
IMAGE_ARCHIVE_MAX_MB = int(os.environ.get("COMPARNA_IMAGE_MAX_MB", "2048"))
IMAGE_ARCHIVE_MAX_EXPANDED_MB = int(os.environ.get("COMPARNA_IMAGE_MAX_EXPANDED_MB", "8192"))
FILE_UPLOAD_TEMP_DIR = os.environ.get("COMPARNA_UPLOAD_TMP") or None
# Uploads over the archive cap are cut off while they arrive (comparna.owners.images).
FILE_UPLOAD_HANDLERS = [
    "comparna.owners.images.CappedUploadHandler",
    "django.core.files.uploadhandler.MemoryFileUploadHandler",
    "django.core.files.uploadhandler.TemporaryFileUploadHandler",
]
# Web services: first retry delay (doubled per retry). Endpoints on private, loopback or link-local
# addresses are refused unless inside COMPARNA_WEBSERVICE_ALLOWED_NETWORKS (read by
# predictors.core.netguard from the environment, e.g. "127.0.0.0/8" in the tests).
WEBSERVICE_BACKOFF_S = float(os.environ.get("COMPARNA_WEBSERVICE_BACKOFF_S", "2"))
# The API knows owners by their token (Authorization: Token <key>) or their session.
REST_FRAMEWORK["DEFAULT_AUTHENTICATION_CLASSES"] = [
    "comparna.owners.auth.OwnerTokenAuthentication",
    "rest_framework.authentication.SessionAuthentication",
]
# JSON nested too deeply to decode is a 400, not a 500 (issue 26); forms and multipart as DRF's default.
REST_FRAMEWORK["DEFAULT_PARSER_CLASSES"] = [
    "comparna.api.parsers.BoundedJSONParser",
    "rest_framework.parsers.FormParser",
    "rest_framework.parsers.MultiPartParser",
]
