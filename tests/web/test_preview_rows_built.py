"""The preview builds a row view only for the messages its window shows; the counts and totals stay
exact for the whole request (quality.md, Performance)."""

from assembly import assemble
from preview_app import result_display
from preview_app.previews import session_request
from preview_app.request_rows import render_window
from studio.history_window import ShownMessage, history_window, notable_messages
from tests.web.big_sessions import big_session


def test_only_the_shown_rows_are_built_and_the_totals_count_every_message(db, users, monkeypatch):
    session = big_session(users["admin"], size=300, name="Three hundred")
    result = assemble(session_request(session, session.applied_document | {"id": "applied"}))
    built = []
    real_row = result_display.Row
    monkeypatch.setattr(result_display, "Row", lambda *args: built.append(args[0]) or real_row(*args))
    view = result_display.display(result)
    segments = history_window(result.request.messages, notable_messages(result))
    html = render_window(view.rows, segments, lambda run: f"/rows?from={run.first}&to={run.last}")
    shown = [s.index for s in segments if isinstance(s, ShownMessage)]
    assert len(shown) < 40 and sorted(built) == shown
    assert view.message_count == len(result.request.messages) == 303
    totals = {t.status: (t.messages, t.tokens) for t in view.history_totals}
    native = [m for m in result.request.messages if m.history_status == "native"]
    assert totals["native"] == (len(native), sum(m.tokens for m in native)) and len(native) == 300
    assert html.count('class="msg ') == len(shown) and 'data-collapsed-range="4-297"' in html
    assert view.rows[-1].index == 302 and view.rows[5].message is result.request.messages[5]
