"""The composer's commit says what it committed, in the history's numbering, with htmx (inside the chat it swaps)
and without JavaScript alike; host records stored with the turn are named too; in both languages."""

import re

import pytest

from preview_app import services
from preview_app.models import SessionEvent
from strategies_app import services as strategy_services
from strategies_app.models import Preset, Strategy
from tests.web.conftest import client_for


def _session(users, strategy):
    preset = strategy_services.preset_import(user=users["admin"], data={"prompts": [
        {"identifier": "main", "role": "system", "content": "You keep the lighthouse."},
        {"identifier": "chatHistory", "marker": True}]}, name="Lamp")
    session = services.session_create(user=users["designer"], name="Chat", preset=Preset.objects.get(pk=preset.id),
                                      host={"core_available": True})
    services.event_append(session=session, role="assistant", content="Evening, keeper.")
    return services.strategy_apply(session=session, strategy=Strategy.objects.get(slug=strategy))


def _commit(client, session, *, htmx, language=None, **data):
    if language:
        client.cookies["django_language"] = language
    headers = {"HTTP_HX_REQUEST": "true"} if htmx else {}
    return client.post(f"/sessions/{session.pk}/say/", {"expected_seq": "", "action": "commit", **data},
                       follow=True, **headers)


def _notice(html):
    chat = html[html.index('<div id="chat">'):html.index('<aside class="session-side">')]
    return re.findall(r"data-composer-notice>([^<]+)</li>", chat)


@pytest.mark.parametrize("htmx", [True, False])
def test_the_commit_names_the_new_history_numbers(users, htmx):
    session = _session(users, "builtin-st")
    response = _commit(client_for(users["designer"]), session, htmx=htmx, content="Is the lamp lit?", reply="It is.")
    assert response.status_code == 200
    events = list(SessionEvent.objects.filter(session=session).values_list("seq", "content", "source"))
    assert [(seq, content) for seq, content, _source in events if seq > 1 and content] == [
        (2, "Is the lamp lit?"), (4, "It is.")]
    assert events[2][2]["kind"] == "request-assembly"  # builtin-st logs the revision it used
    assert _notice(response.content.decode()) == [
        "Turn committed: your message and the reply are now history #2 and #4. "
        "The host also stored 1 record with it: #3."]
    # shown once: the next page no longer says it
    assert _notice(client_for(users["designer"]).get(f"/sessions/{session.pk}/").content.decode()) == []


def test_a_message_alone_and_the_host_records_stored_with_it(users):
    """The standard backend records the system prompt with the first turn: the notice names that record too."""
    session = _session(users, "builtin-native-slots")
    response = _commit(client_for(users["designer"]), session, htmx=True, content="Hello?", reply="")
    created = list(SessionEvent.objects.filter(session=session, seq__gt=1).order_by("seq"))
    message = next(e for e in created if e.content == "Hello?")
    records = [e for e in created if e is not message]
    assert records and all(e.source.get("kind") != "user" for e in records)
    [notice] = _notice(response.content.decode())
    assert notice.startswith(f"Turn committed: your message is now history #{message.seq}.")
    count = len(records)
    records_word = "record" if count == 1 else "records"
    assert notice.endswith(f"The host also stored {count} {records_word} with it: "
                           + ", ".join(f"#{e.seq}" for e in records) + ".")


def test_the_notice_in_chinese(users):
    session = _session(users, "builtin-st")
    response = _commit(client_for(users["designer"]), session, htmx=True, language="zh-hans", content="灯亮着吗？",
                       reply="亮着。")
    assert _notice(response.content.decode()) == ["已提交本轮：你的消息和回复现在是历史 #2 和 #4。宿主还随之保存了 1 条记录：#3。"]


def test_a_refused_commit_says_nothing_was_committed(users):
    session = _session(users, "builtin-st")
    response = _commit(client_for(users["designer"]), session, htmx=True, content="", reply="")
    assert response.status_code == 400 and _notice(response.content.decode()) == []
    assert SessionEvent.objects.filter(session=session).count() == 1
