"""The pages of a 5,000-message session show a window of the history. Runs of plain native
history fold into one row naming its range, count and tokens; its link (a real href, htmx in place) answers the
range, at most RANGE_ROWS rows with its own "show more" (quality.md, Performance)."""

import dataclasses
import re

import pytest

from assembly import assemble
from preview_app.previews import session_request
from preview_app.strategy_choice import query_choice
from studio.history_window import RANGE_ROWS
from tests.web.big_sessions import BIG, big_session
from tests.web.conftest import client_for

MB = 1_000_000


@pytest.fixture
def long_chat(users):
    session = big_session(users["designer"])
    result = assemble(session_request(session, query_choice(session, None, None).document))
    return session, result


def _shown(html: str) -> list[int]:
    return [int(i) for i in re.findall(r'<tbody class="msg [^"]*" id="msg-\d+" data-index="(\d+)"', html)]


def _collapsed(html: str) -> list[tuple[str, int, int]]:
    return [(r, int(c), int(t)) for r, c, t in re.findall(
        r'data-collapsed-range="(\d+-\d+)" data-count="(\d+)" data-tokens="(\d+)"', html)]


def test_the_preview_page_folds_the_long_history_into_one_row(users, long_chat):
    session, result = long_chat
    messages = result.request.messages
    response = client_for(users["designer"]).get(f"/sessions/{session.pk}/preview/")
    html = response.content.decode()
    assert response.status_code == 200 and len(response.content) < MB
    # system prompt, 5,000 history messages, the input, the jailbreak: history is 1..5000
    first, last = 1 + 3, BIG - 3
    tokens = sum(m.tokens for m in messages[first:last + 1])
    assert _collapsed(html) == [(f"{first}-{last}", last - first + 1, tokens)]
    assert _shown(html) == [0, 1, 2, 3, BIG - 2, BIG - 1, BIG, BIG + 1, BIG + 2]
    assert f"messages {first:,}–{last:,}: {last - first + 1:,} history messages, {tokens:,} tokens" in html
    # the totals stay exact: every message counted, folded or not
    assert f"{BIG + 3:,} messages" in html
    assert re.search(rf'data-history-total="native">.*?{BIG:,} messages', html)
    href = f"/sessions/{session.pk}/preview/rows/?from={first}&amp;to={last}"
    assert f'href="{href}"' in html and f'hx-get="{href}"' in html


def test_the_expand_link_answers_the_range_as_a_page_and_as_rows(users, long_chat):
    session, result = long_chat
    client = client_for(users["designer"])
    url = f"/sessions/{session.pk}/preview/rows/?from=4&to=4997"
    page = client.get(url)
    html = page.content.decode()
    assert page.status_code == 200 and "<html" in html and "Back to the whole preview" in html
    assert _shown(html) == list(range(4, 4 + RANGE_ROWS))
    rest = sum(m.tokens for m in result.request.messages[4 + RANGE_ROWS:4998])
    assert _collapsed(html) == [(f"{4 + RANGE_ROWS}-4997", 4997 - 4 - RANGE_ROWS + 1, rest)]
    partial = client.get(url, HTTP_HX_REQUEST="true").content.decode()
    assert "<html" not in partial and partial.lstrip().startswith("<tbody")
    assert _shown(partial) == list(range(4, 4 + RANGE_ROWS)) and len(_collapsed(partial)) == 1
    more = client.get(f"/sessions/{session.pk}/preview/rows/?from=4800&to=4997", HTTP_HX_REQUEST="true")
    assert _shown(more.content.decode()) == list(range(4800, 4998)) and not _collapsed(more.content.decode())


@pytest.mark.parametrize(("query", "field"), [("from=x&to=3", "from"), ("to=3", "from"), ("from=3", "to"),
                                              ("from=9&to=3", "to"), ("from=-1&to=3", "from")])
def test_a_bad_range_is_refused_naming_the_field(users, long_chat, query, field):
    session, _ = long_chat
    response = client_for(users["designer"]).get(f"/sessions/{session.pk}/preview/rows/?{query}")
    assert response.status_code == 400 and f"{field}: expected" in response.content.decode()


def test_a_small_session_shows_every_row(users):
    session = big_session(users["designer"], 40, name="Short chat")
    html = client_for(users["designer"]).get(f"/sessions/{session.pk}/preview/").content.decode()
    assert _shown(html) == list(range(43)) and not _collapsed(html)


def _aligned(html: str) -> list[tuple[str, str]]:
    return re.findall(r'<tr class="aligned kind-(\w+)" data-change="\w+" data-changes="[^"]*"'
                      r'(?: data-a-index="\d+")?(?: data-b-index="(\d+)")?', html)


def test_compare_folds_the_unchanged_history_and_shows_every_difference(users, long_chat):
    session, _ = long_chat
    client = client_for(users["designer"])
    url = f"/sessions/{session.pk}/compare/?a=applied&b=builtin-native-slots"
    response = client.get(url)
    html = response.content.decode()
    assert response.status_code == 200 and len(response.content) < MB
    folded = _collapsed(html)
    assert len(folded) == 1
    span, count, tokens = folded[0]
    first, last = map(int, span.split("-"))
    assert count == last - first + 1 > 4_000
    rows = _aligned(html)
    assert rows and len(rows) < 100 and any(kind != "same" for kind, _ in rows)
    href = f"/sessions/{session.pk}/compare/rows/?a=applied&amp;b=builtin-native-slots&amp;from={first}&amp;to={last}"
    assert f'href="{href}"' in html and f'hx-get="{href}"' in html
    rows_url = href.replace("&amp;", "&")
    page = client.get(rows_url).content.decode()
    assert "<html" in page and "Back to the whole comparison" in page
    shown = [int(b) for _, b in _aligned(page)]
    assert shown == list(range(first, first + RANGE_ROWS))
    more = _collapsed(page)
    assert [(r, c) for r, c, _ in more] == [(f"{first + RANGE_ROWS}-{last}", count - RANGE_ROWS)]
    assert 0 < more[0][2] < tokens  # the rest's tokens are a part of the run's
    partial = client.get(rows_url, HTTP_HX_REQUEST="true").content.decode()
    assert "<html" not in partial and partial.lstrip().startswith("<tr") and len(_aligned(partial)) == RANGE_ROWS


def test_compare_only_changes_shows_no_folded_row(users, long_chat):
    session, _ = long_chat
    html = client_for(users["designer"]).get(
        f"/sessions/{session.pk}/compare/?a=applied&b=builtin-native-slots&only=1").content.decode()
    assert not _collapsed(html) and all(kind != "same" for kind, _ in _aligned(html))


def test_the_api_can_leave_the_texts_out(users, long_chat):
    session, result = long_chat
    client = client_for(users["designer"])
    whole = client.get(f"/api/sessions/{session.pk}/preview")
    lean = client.get(f"/api/sessions/{session.pk}/preview?texts=0")
    assert whole.status_code == lean.status_code == 200 and len(lean.content) < len(whole.content)
    full, bare = whole.json(), lean.json()
    assert len(bare["request"]["messages"]) == len(full["request"]["messages"]) == BIG + 3
    assert all(m["content"] is None for m in bare["request"]["messages"])
    assert all(n["text"] is None for n in bare["nodes"])
    assert [(m["role"], m["tokens"], m["parts"]) for m in bare["request"]["messages"]] == [
        (m["role"], m["tokens"], m["parts"]) for m in full["request"]["messages"]]
    assert bare["tokens"] == full["tokens"] and full["request"]["messages"][1]["content"].startswith("Message 0")
    assert client.get(f"/api/sessions/{session.pk}/preview?texts=1").json() == full


@pytest.mark.parametrize("value", ["no", "", "2", "false"])
def test_a_bad_texts_value_is_refused_naming_the_field(users, long_chat, value):
    session, _ = long_chat
    response = client_for(users["designer"]).get(f"/api/sessions/{session.pk}/preview?texts={value}")
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "INPUT_INVALID" and "texts" in body["error"]


def test_the_editor_live_preview_folds_the_history(users, long_chat):
    from strategies_app import services as strategy_services
    from strategies_app.models import Strategy

    session, result = long_chat
    designer = users["designer"]
    own = strategy_services.strategy_copy(user=designer, source=Strategy.objects.get(slug="builtin-st"),
                                          name="Long chat strategy")
    client = client_for(designer)
    response = client.get(f"/strategies/{own.slug}/edit/?session={session.pk}")
    html = response.content.decode()
    assert response.status_code == 200 and len(response.content) < MB
    panel = html[html.index('id="preview-panel"'):]
    first, last = 4, BIG - 3
    tokens = sum(m.tokens for m in result.request.messages[first:last + 1])
    assert _collapsed(panel) == [(f"{first}-{last}", last - first + 1, tokens)]
    items = [int(i) for i in re.findall(r'<li class="message role-[^"]*"[^>]* data-index="(\d+)"', panel)]
    assert items == [0, 1, 2, 3, BIG - 2, BIG - 1, BIG, BIG + 1, BIG + 2]
    assert f"<span data-message-count>{BIG + 3}</span>" in panel
    href = (f"/sessions/{session.pk}/preview/rows/?strategy={own.slug}&amp;from={first}&amp;to={last}"
            "&amp;layout=editor")
    assert f'href="{href}"' in panel and f'hx-get="{href}"' in panel
    partial = client.get(href.replace("&amp;", "&"), HTTP_HX_REQUEST="true").content.decode()
    assert "<html" not in partial and partial.lstrip().startswith("<li")
    shown = [int(i) for i in re.findall(r'<li class="message role-[^"]*"[^>]* data-index="(\d+)"', partial)]
    assert shown == list(range(first, first + RANGE_ROWS)) and len(_collapsed(partial)) == 1
    assert "layout=editor" in partial  # its own "show more" stays in the editor's list
    page = client.get(href.replace("&amp;", "&"))  # without JavaScript: the range as a page
    assert page.status_code == 200 and _shown(page.content.decode()) == list(range(first, first + RANGE_ROWS))


def test_the_goldens_page_of_a_long_session_lists_only_what_changed(users, long_chat):
    from preview_app import services as session_services
    from strategies_app import services as strategy_services
    from strategies_app.models import Strategy

    session, _ = long_chat
    designer = users["designer"]
    own = strategy_services.strategy_copy(user=designer, source=Strategy.objects.get(slug="builtin-st"),
                                          name="Pinned strategy")
    revision, _ = strategy_services.revision_save(strategy=own, user=designer, note="pinned")
    session_services.strategy_apply(session=session, strategy=own)
    golden = session_services.golden_approve(session=session, revision=revision, user=users["qa"])
    session_services.event_append(session=session, role="assistant", content="A new reply.", name="")
    response = client_for(users["qa"]).get("/goldens/")
    html = response.content.decode()
    assert response.status_code == 200 and len(response.content) < MB
    assert f'data-golden-id="{golden.pk}" data-status="differs"' in html
    rows = _aligned(html)
    assert 0 < len(rows) < 10 and all(kind != "same" for kind, _ in rows) and not _collapsed(html)
    unchanged = int(re.search(r'data-unchanged="(\d+)"', html).group(1))
    assert unchanged > BIG - 10 and f"{unchanged} unchanged messages not shown." in html


def test_the_editor_keeps_every_row_the_last_write_changed(long_chat):
    from strategies_app.edit_effects import EditEffect
    from strategies_app.presenters import preview_view

    _, result = long_chat
    view = preview_view(result, EditEffect(changed=1, sentence="1 with new content", changes={2500: ["content"]}))
    shown = {item["index"]: item for item in view["messages"] if not item.get("collapsed")}
    assert shown[2500]["changes"] == ["content"] and {2497, 2498, 2499, 2501, 2502, 2503} <= set(shown)
    runs = [(item["first"], item["last"]) for item in view["messages"] if item.get("collapsed")]
    assert runs == [(4, 2496), (2504, BIG - 3)] and view["message_count"] == BIG + 3


def test_a_diagnostic_a_lock_or_an_injection_inside_history_stays_shown(long_chat):
    from assembly.results import Diagnostic
    from studio.history_window import notable_messages

    _, result = long_chat
    messages = list(result.request.messages)
    messages[3000] = dataclasses.replace(messages[3000], parts=[*messages[3000].parts, "worldbook:gate"])
    nodes = [dataclasses.replace(n, lock_reason="depth") if n.id == "history:m1999" else n for n in result.nodes]
    changed = result.model_copy(update={
        "diagnostics": [Diagnostic.of({"code": "NATIVE_DEPTH_BOUNDARY", "id": "history:m999"})], "nodes": nodes,
        "request": result.request.model_copy(update={"messages": messages})})
    assert notable_messages(result) == set()
    assert notable_messages(changed) == {1000, 2000, 3000}  # history:mN is message N + 1 (after the system one)
