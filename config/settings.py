"""Settings: SQLite by default, DATABASE_URL for PostgreSQL, DJANGO_ENV=production for deploys."""

import os
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from studio.cache_settings import caches_setting
from studio.collector import parse_threshold

BASE_DIR = Path(__file__).resolve().parent.parent
PRODUCTION = os.environ.get("DJANGO_ENV") == "production"

if PRODUCTION:
    SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "")
    if not SECRET_KEY:
        raise ImproperlyConfigured("DJANGO_SECRET_KEY is not set: production (DJANGO_ENV=production) needs a long "
                                   "random secret key in the DJANGO_SECRET_KEY environment variable")
    ALLOWED_HOSTS = [h for h in os.environ.get("DJANGO_ALLOWED_HOSTS", "").split(",") if h]
    DEBUG = False
else:
    # Development only: a fixed key is fine on a laptop, never in production (see above).
    SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "dev-insecure-prompt-assembly-studio")
    ALLOWED_HOSTS = ["127.0.0.1", "localhost", "testserver"]
    DEBUG = os.environ.get("DJANGO_DEBUG", "1") == "1"

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    "axes",
    "csp",
    "template_partials",
    "strategies_app",
    "preview_app",
    "studio.apps.StudioConfig",
]

# Every engine run of the web process stops after this many seconds with a coded 503 (studio/engine_runs.py), well
# inside gunicorn's own timeout (gunicorn.conf.py), so no request holds a worker.
STUDIO_ENGINE_DEADLINE_SECONDS = float(os.environ.get("STUDIO_ENGINE_DEADLINE_SECONDS", "5"))

# Django's caches: local memory in each process by default; CACHE_URL or REDIS_URL (redis://...) shares them through
# Redis (studio/cache_settings.py). The `results` alias keeps engine results (studio/result_cache.py), each at most
# STUDIO_RESULT_CACHE_MAX_BYTES of pickle.
CACHES = caches_setting(os.environ)
STUDIO_RESULT_CACHE_MAX_BYTES = int(os.environ.get("STUDIO_RESULT_CACHE_MAX_BYTES", str(4 * 1024 * 1024)))

# The server process's collector thresholds (studio/collector.py); "off" leaves the interpreter's own.
STUDIO_GC_THRESHOLD = parse_threshold(os.environ.get("STUDIO_GC_THRESHOLD"))

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "studio.error_pages.ErrorAnswersMiddleware",  # /api/ answers JSON for every error; a page's refusal its page
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "studio.input_boundary.InputBoundaryMiddleware",  # before CSRF: Django's own body refusals get a clear page
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "csp.middleware.CSPMiddleware",
    "axes.middleware.AxesMiddleware",  # last, as django-axes asks
]

ROOT_URLCONF = "config.urls"
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
            "builtins": ["studio.wording_filters"],
        },
    },
]
WSGI_APPLICATION = "config.wsgi.application"

DATABASES = {
    "default": dj_database_url.config(default=f"sqlite:///{BASE_DIR / 'db.sqlite3'}", conn_max_age=60),
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Several workers on one file: take the write lock when a transaction starts (no "database is locked" half-way
    # through), wait for it instead of failing, and let readers run beside the writer (WAL).
    DATABASES["default"].setdefault("OPTIONS", {}).update({
        "transaction_mode": "IMMEDIATE",
        "timeout": 20,
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL",
    })
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
AUTHENTICATION_BACKENDS = [
    "studio.login_throttle.ThrottledLoginBackend",  # refuses a throttled user+IP before the password is checked
    "django.contrib.auth.backends.ModelBackend",
]
# Login throttling (django-axes): the tenth wrong password for one user from one IP locks that pair for an hour;
# the studio's and the admin's login both go through authenticate(), so both are covered.
AXES_FAILURE_LIMIT = 10
AXES_COOLOFF_TIME = 1  # hours
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
# How many proxies in front of the studio append the client's address to X-Forwarded-For (0: none, REMOTE_ADDR is the
# client's): behind one, every login would otherwise share the proxy's address and lock out everyone.
STUDIO_TRUSTED_PROXIES = int(os.environ.get("STUDIO_TRUSTED_PROXIES", "0"))
AXES_CLIENT_IP_CALLABLE = "studio.login_throttle.client_ip"
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_VERBOSE = False

# Content-Security-Policy: scripts and styles from our own origin only (no inline script anywhere). Inline style
# *attributes* stay allowed for the width of the bars (style="width: ..%"); <style> elements do not.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "style-src-attr": ["'unsafe-inline'"],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    },
}
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en"
LANGUAGES = [("en", "English"), ("zh-hans", "简体中文")]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = BASE_DIR / "staticfiles"
WHITENOISE_USE_FINDERS = not PRODUCTION  # serve straight from static/ until collectstatic runs

# Uploads above 5 MiB are refused (quality.md); Django's own cap stops larger bodies early.
DATA_UPLOAD_MAX_MEMORY_SIZE = 6 * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024
FILE_UPLOAD_HANDLERS = [
    "studio.input_boundary.FileNameLimit",  # a 5,000-character name is a 400 naming the limit, not cut silently
    "django.core.files.uploadhandler.MemoryFileUploadHandler",
    "django.core.files.uploadhandler.TemporaryFileUploadHandler",
]

# Sessions in the database: deactivating a user deletes theirs (studio/user_services.py), for good.
SESSION_ENGINE = "django.contrib.sessions.backends.db"
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False  # htmx reads the token from the page, not the cookie; kept default-compatible
if PRODUCTION:
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_SSL_REDIRECT = os.environ.get("DJANGO_SECURE_SSL_REDIRECT", "1") == "1"
    SECURE_HSTS_SECONDS = int(os.environ.get("DJANGO_HSTS_SECONDS", "31536000"))
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    STORAGES = {
        "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
        "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
    }

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": "WARNING"},
}
