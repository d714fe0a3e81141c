"""A large session's page and its refusal re-renders show a window of the history (the newest
messages, older ones behind a "show older" link with a real href and htmx), never the whole of it (quality.md,
Performance)."""

import re

import pytest

from preview_app import services
from preview_app.models import SessionEvent
from preview_app.selectors import HISTORY_WINDOW
from tests.web.conftest import client_for

BIG = 20_000


@pytest.fixture
def big_session(users):
    session = services.session_create(user=users["designer"], name="Big")
    SessionEvent.objects.bulk_create(
        SessionEvent(session=session, seq=seq, message_id=f"m{seq}", role="user" if seq % 2 else "assistant",
                     content=f"message {seq}") for seq in range(1, BIG + 1))
    return session


def _rows(html: str) -> list[int]:
    return [int(seq) for seq in re.findall(r'<li class="event[^"]*" id="event-\d+" data-seq="(\d+)"', html)]


def test_the_page_of_a_20000_message_session_shows_only_the_newest_window(users, big_session):
    html = client_for(users["designer"]).get(f"/sessions/{big_session.pk}/").content.decode()
    assert _rows(html) == list(range(BIG - HISTORY_WINDOW + 1, BIG + 1))
    older = f"/sessions/{big_session.pk}/?before={BIG - HISTORY_WINDOW + 1}"
    assert f'href="{older}#history"' in html and f'hx-get="{older}"' in html
    assert f"({BIG - HISTORY_WINDOW:,} before these)" in html and f"({BIG:,})" in html
    # the commit form says the real last message, not the window's
    assert f'name="expected_seq" value="{BIG}"' in html


def test_show_older_without_js_is_a_page_and_with_htmx_only_the_rows(users, big_session):
    client = client_for(users["designer"])
    page = client.get(f"/sessions/{big_session.pk}/?before=101").content.decode()
    assert _rows(page) == list(range(51, 101)) and "Back to the newest messages" in page
    partial = client.get(f"/sessions/{big_session.pk}/?before=51", HTTP_HX_REQUEST="true").content.decode()
    assert _rows(partial) == list(range(1, 51))
    assert "<html" not in partial and "data-history-older" not in partial  # the first message: nothing older


def test_a_refused_commit_re_renders_the_window_not_the_whole_history(users, big_session):
    response = client_for(users["designer"]).post(f"/sessions/{big_session.pk}/commit/",
                                                  {"expected_seq": "3", "reply": "hi"})
    assert response.status_code == 413  # 20,000 messages is the limit, so the session takes no more
    assert len(_rows(response.content.decode())) == HISTORY_WINDOW
    assert SessionEvent.objects.filter(session=big_session).count() == BIG


def test_editing_an_old_message_shows_the_window_that_holds_it(users, big_session):
    html = client_for(users["designer"]).get(f"/sessions/{big_session.pk}/?edit=10").content.decode()
    rows = _rows(html)
    assert 10 in rows and len(rows) <= HISTORY_WINDOW and 'name="e10-content"' in html
    # move up is off only on the history's first message, wherever the window starts
    assert len(re.findall(r'value="up" class="icon" aria-label="[^"]*" disabled', html)) == 1
