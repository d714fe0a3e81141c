"""gunicorn settings for the studio (README "Production": `gunicorn -c gunicorn.conf.py config.wsgi`).

Sync workers: the engine is CPU-bound pure Python, so one request per process is what a core can do anyway. Each
engine run stops at STUDIO_ENGINE_DEADLINE_SECONDS (default 5 s, studio/engine_runs.py) with a coded 503; `timeout`
is the last resort above it (a page runs a few engine runs, a goldens page one per golden), never the normal answer.
"""

import os

bind = os.environ.get("GUNICORN_BIND", "127.0.0.1:8000")
workers = int(os.environ.get("GUNICORN_WORKERS", "3"))
worker_class = "sync"
timeout = int(os.environ.get("GUNICORN_TIMEOUT", "30"))
graceful_timeout = 30
# Recycle a worker now and then (the engine's memo caches are bounded, but a long-lived process still fragments);
# the jitter keeps the workers from restarting together.
max_requests = 2000
max_requests_jitter = 200
# A slow client cannot hold a sync worker while it trickles its headers in.
limit_request_line = 8190
limit_request_fields = 100
keepalive = 2
accesslog = "-"
errorlog = "-"


def post_worker_init(worker):
    """Each worker loads the views, the engine with its default tokenizer and the templates before it takes a request
    (studio/warm_up.py): the first preview after a start or a recycle does not pay for them. STUDIO_WARM_UP=0 skips
    it (the first request loads them)."""
    if os.environ.get("STUDIO_WARM_UP", "1") != "0":
        from studio.warm_up import warm_up

        warm_up()
