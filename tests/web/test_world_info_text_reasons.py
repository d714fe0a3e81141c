"""The three world-info skip reasons whose numbers the engine gives only in its text (a generation trigger, a chat
delay, a recursion delay) are worded by the page, so they read in Chinese too."""

import pytest

from tests.web.conftest import client_for
from tests.web.test_world_info_log import CHAT, _log, _session

pytestmark = pytest.mark.django_db

PROMPTS = [{"identifier": "main", "role": "system", "content": "You guard the forest."},
           {"identifier": "worldInfoBefore", "marker": True},
           {"identifier": "chatHistory", "marker": True}]


@pytest.fixture
def waiting(users):
    """Every entry's key is in the input; each waits for something this request is not: an impersonation, a chat
    of 10 messages (it has 5: the 4 in history and the input), recursion level 2 (the book does not recurse)."""
    return _session(users, prompts=PROMPTS, entries={
        "0": {"uid": 0, "key": ["wolf"], "comment": "Impersonated", "content": "A.", "position": 0,
              "triggers": ["impersonate", "continue"]},
        "1": {"uid": 1, "key": ["wolf"], "comment": "Later", "content": "B.", "position": 0, "delay": 10},
        "2": {"uid": 2, "key": ["wolf"], "comment": "Deeper", "content": "C.", "position": 0,
              "delayUntilRecursion": 2}}, chat=CHAT, typed="Any wolf about?")


def _reasons(client, session, language):
    client.cookies["django_language"] = language
    html = client.get(f"/sessions/{session.pk}/preview/").content.decode()
    return {uid: reason for uid, state, reason, *_ in _log(html) if state == "out"}


def test_the_reasons_in_english(users, waiting):
    reasons = _reasons(client_for(users["qa"]), waiting, "en")
    assert reasons == {
        "0": "only for impersonate, continue generations; this is a normal generation",
        "1": "waits until the chat has 10 messages; it has 5",
        "2": "waits for recursion level 2; no recursion pass reached it",
    }


def test_the_reasons_in_chinese(users, waiting):
    reasons = _reasons(client_for(users["qa"]), waiting, "zh-hans")
    assert reasons == {
        "0": "仅用于代写、继续生成；这次是正常生成",
        "1": "等到聊天有 10 条消息；现在有 5 条",
        "2": "等待第 2 层递归；没有递归扫描到达这一层",
    }
