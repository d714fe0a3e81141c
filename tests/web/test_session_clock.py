"""A session's clock: the moment SillyTavern's time and date macros read (`Session.clock`, sent as the request's
`generation.now`). Not set, the macros stay as written (UNSUPPORTED_MACRO) and the request carries no `now`; set on
the settings form (or the API), the preview shows the time as moment.js formats it (en locale): 'LT' "3:05 PM",
'LL' "December 6, 2026", 'dddd' "Sunday". Bad input is refused naming the field and stores nothing."""

import html as markup
import json

import pytest

from preview_app import services
from preview_app.models import Session
from tests.web.conftest import client_for
from tests.web.main_prompt_sessions import main_prompt_session
from tests.web.test_macro_variables import _edit_data

MAIN = "It is {{weekday}}, {{date}}, {{time}} (UTC+2: {{time_UTC+2}})."


@pytest.fixture
def session(users):
    return main_prompt_session(users, content=MAIN, name="Clock")


def _preview(user, session):
    result = client_for(user).get(f"/api/sessions/{session.pk}/preview").json()
    return result["request"]["messages"][0]["content"], result


def test_a_session_without_a_clock_leaves_the_time_macros_as_written(users, session):
    from preview_app.previews import session_request, strategy_document

    request = session_request(session, strategy_document(session.applied_strategy, session.applied_document))
    assert "now" not in request["generation"]
    main, result = _preview(users["qa"], session)
    assert main == MAIN
    assert [d["macro"] for d in result["diagnostics"] if d["code"] == "UNSUPPORTED_MACRO"] == \
        ["weekday", "date", "time", "time_UTC"]
    html = markup.unescape(client_for(users["qa"]).get(f"/sessions/{session.pk}/").content.decode())
    assert 'data-session-clock=""' in html and "not set (left as written)" in html


def test_the_settings_form_sets_the_clock_and_the_preview_shows_the_formatted_time(users, session):
    data = _edit_data(session, clock="2026-12-06T15:05+08:00")
    response = client_for(users["designer"]).post(f"/sessions/{session.pk}/edit/", data)
    assert response.status_code == 302
    stored = Session.objects.get(pk=session.pk)
    assert stored.clock == "2026-12-06T15:05:00+08:00"
    main, result = _preview(users["qa"], stored)
    # 15:05 at UTC+08:00 is 07:05 UTC; +2 hours: 9:05 AM
    assert main == "It is Sunday, December 6, 2026, 3:05 PM (UTC+2: 9:05 AM)."
    assert not [d for d in result["diagnostics"] if d["code"] == "UNSUPPORTED_MACRO"]
    html = markup.unescape(client_for(users["qa"]).get(f"/sessions/{session.pk}/").content.decode())
    assert 'data-session-clock="2026-12-06T15:05:00+08:00"' in html
    # shown in parts a narrow column can break between, never inside the date
    assert '<time datetime="2026-12-06T15:05:00+08:00">2026-12-06 15:05 UTC+08:00</time>' in html


@pytest.mark.parametrize(("clock", "words"), [
    ("2026-12-06T15:05:00+08:00", "2026-12-06 15:05 UTC+08:00"), ("2026-03-22T00:30:00+00:00", "2026-03-22 00:30 UTC"),
    ("2026-03-22T00:30:15-05:30", "2026-03-22 00:30:15 UTC-05:30"), ("", "")])
def test_the_settings_list_shows_the_clock_as_date_time_and_offset(clock, words):
    from preview_app.presenters import clock_words

    assert clock_words(clock) == words


def test_a_clock_without_an_offset_is_utc_and_blank_clears_it(users, session):
    client = client_for(users["designer"])
    assert client.post(f"/sessions/{session.pk}/edit/", _edit_data(session, clock="2026-03-22 00:30")).status_code \
        == 302
    stored = Session.objects.get(pk=session.pk)
    assert stored.clock == "2026-03-22T00:30:00+00:00"
    assert _preview(users["qa"], stored)[0] == "It is Sunday, March 22, 2026, 12:30 AM (UTC+2: 2:30 AM)."
    assert client.post(f"/sessions/{session.pk}/edit/", _edit_data(stored, clock="")).status_code == 302
    assert Session.objects.get(pk=session.pk).clock == ""


@pytest.mark.parametrize("clock", ["tomorrow", "2026-13-01T10:00", "2026-12-06T15:05+08:00:30"])
def test_a_bad_clock_on_the_settings_form_is_refused_naming_the_field_and_stores_nothing(users, session, clock):
    services.session_update(session=session, clock="2026-12-06T15:05+08:00")
    data = _edit_data(Session.objects.get(pk=session.pk), clock=clock, name="Renamed")
    response = client_for(users["designer"]).post(f"/sessions/{session.pk}/edit/", data)
    assert response.status_code == 400
    html = markup.unescape(response.content.decode())
    around = html[html.index('id="id_clock"') - 800:html.index('id="id_clock"') + 800]
    assert "Time macros read: expected a date and time" in around
    stored = Session.objects.get(pk=session.pk)
    assert (stored.name, stored.clock) == ("Clock", "2026-12-06T15:05:00+08:00")


def test_the_api_reads_writes_and_refuses_the_clock(users, session):
    client = client_for(users["designer"])
    assert client.get(f"/api/sessions/{session.pk}").json()["clock"] is None
    ok = client.patch(f"/api/sessions/{session.pk}", json.dumps({"clock": "2026-12-06T15:05:00Z"}),
                      content_type="application/json")
    assert ok.status_code == 200
    assert client.get(f"/api/sessions/{session.pk}").json()["clock"] == "2026-12-06T15:05:00+00:00"
    refused = client.patch(f"/api/sessions/{session.pk}", json.dumps({"clock": 1796540709, "name": "Renamed"}),
                           content_type="application/json")
    assert refused.status_code == 400
    assert refused.json()["code"] == "INPUT_INVALID" and refused.json()["detail"]["path"] == "clock"
    stored = Session.objects.get(pk=session.pk)
    assert (stored.name, stored.clock) == ("Clock", "2026-12-06T15:05:00+00:00")


def test_a_copy_keeps_the_clock(users, session):
    services.session_update(session=session, clock="2026-12-06T15:05+08:00")
    copy = services.session_copy(session=session, user=users["designer"])
    assert Session.objects.get(pk=copy.pk).clock == "2026-12-06T15:05:00+08:00"


def test_the_clock_in_chinese(users, session):
    from django.utils import translation

    from preview_app.forms import SessionForm

    html = client_for(users["designer"]).get(f"/sessions/{session.pk}/", HTTP_ACCEPT_LANGUAGE="zh-hans")
    html = markup.unescape(html.content.decode())
    with translation.override("en"):
        help_en = str(SessionForm.base_fields["clock"].help_text)
    with translation.override("zh-hans"):
        for words in ("Time macros read", "not set (left as written)", help_en):
            assert translation.gettext(words) != words and translation.gettext(words) in html
