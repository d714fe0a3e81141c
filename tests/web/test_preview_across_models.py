"""The preview's across-models table as a request of its own (quality.md, Performance): the page links it (loaded with
htmx on a short history, on demand on a long one) and never counts it inline; without JavaScript it is a page."""

import re

from assembly.tokens import ENCODINGS
from tests.web.big_sessions import big_session
from tests.web.conftest import client_for


def preview(client, session, query=""):
    response = client.get(f"/sessions/{session.pk}/preview/?{query}")
    assert response.status_code == 200
    return response.content.decode()


def across_section(html):
    return re.search(r'<section class="panel" id="across"[^>]*>.*?</section>', html, re.S).group(0)


def test_a_short_history_loads_the_table_on_load_with_a_real_link(world, users):
    session = world["session"]
    section = across_section(preview(client_for(users["qa"]), session, "strategy=builtin-st"))
    url = f"/sessions/{session.pk}/preview/across-models/?strategy=builtin-st"
    assert f'hx-get="{url}" hx-trigger="load"' in section
    assert f'<a href="{url}">' in section
    assert "data-encoding=" not in section  # the page itself counts nothing across models


def test_a_long_history_counts_only_when_asked(db, users):
    session = big_session(users["admin"], size=500, name="Five hundred")
    section = across_section(preview(client_for(users["admin"]), session))
    url = f"/sessions/{session.pk}/preview/across-models/"
    assert 'hx-trigger="load"' not in section
    assert f'<a class="button" href="{url}" hx-get="{url}" hx-target="#across" hx-swap="outerHTML">' in section
    html = client_for(users["admin"]).get(url).content.decode()
    assert "<title>Across models · Five hundred" in html
    assert html.count("<tr data-encoding=") == len(ENCODINGS)
    assert f'<a class="button" href="/sessions/{session.pk}/preview/">Back to the preview</a>' in html


def test_a_bad_option_is_refused_naming_the_field(world, users):
    session, client = world["session"], client_for(users["qa"])
    response = client.get(f"/sessions/{session.pk}/preview/across-models/?model=nope")
    assert response.status_code == 400
    html = response.content.decode()
    assert 'data-code="INPUT_INVALID"' in html and "model" in html and "data-encoding=" not in html
    fragment = client.get(f"/sessions/{session.pk}/preview/across-models/?model=nope", HTTP_HX_REQUEST="true")
    assert fragment.status_code == 200 and 'data-code="INPUT_INVALID"' in fragment.content.decode()


def test_a_session_the_user_cannot_read_is_not_found(world, users):
    response = client_for(users["qa"]).get("/sessions/999999/preview/across-models/")
    assert response.status_code == 404
