"""A server process made ready before it takes its first request (gunicorn.conf.py's `post_worker_init`): what
every preview needs and a fresh process would otherwise load inside the first one (about 0.6 s of a 100-message
preview's first answer, most of it the default tokenizer's files):

- the URL configuration, and with it every view module and the engine;
- one small engine request of the SillyTavern strategy (builtin-st), which loads the default tokenizer and the
  engine's models;
- every template of the project's `templates/` folder, compiled into Django's cached template loader.

It reads no database row and keeps no result: the request is run by the engine directly, within the engine's
deadline. A warm-up that fails is logged and the process serves as it is (its first request pays the loading).
"""

from __future__ import annotations

import logging
from pathlib import Path

from django.conf import settings
from django.template import TemplateDoesNotExist, TemplateSyntaxError
from django.template.loader import get_template
from django.urls import get_resolver

logger = logging.getLogger(__name__)

WARM_REQUEST = {"strategy": "builtin-st", "host": {"core_available": True},
                "resources": {"preset": {"prompts": [{"identifier": "main", "role": "system", "content": "Be brief."},
                                                     {"identifier": "chatHistory", "marker": True}]}},
                "conversation": {"history": [{"id": "a", "role": "assistant", "content": "Welcome."}],
                                 "input": [{"id": "u", "role": "user", "content": "Hello"}]}}


def project_templates() -> list[str]:
    """The names of the project's own templates (every `.html` under the TEMPLATES DIRS)."""
    names = []
    for folder in (Path(d) for engine in settings.TEMPLATES for d in engine.get("DIRS", ())):
        names.extend(path.relative_to(folder).as_posix() for path in sorted(folder.rglob("*.html")))
    return names


def warm_up() -> int:
    """Load the views, the engine with its default tokenizer, and the templates; the number of templates compiled."""
    from assembly import api
    from studio.engine_runs import within_deadline

    try:
        get_resolver().url_patterns  # noqa: B018 - imports every view module
        within_deadline(lambda: api.assemble(WARM_REQUEST))
    except Exception:  # the process still serves; its first request loads what is missing
        logger.warning("warm-up: the engine's first run failed", exc_info=True)
    compiled = 0
    for name in project_templates():
        try:
            get_template(name)
            compiled += 1
        except (TemplateDoesNotExist, TemplateSyntaxError):
            logger.warning("warm-up: template %s did not compile", name, exc_info=True)
    return compiled
