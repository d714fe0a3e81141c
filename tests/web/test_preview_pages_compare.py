"""Compare (web.md screen 4): messages are aligned by their parts, and each kind of change is marked: added, removed,
moved, role changed, delivery changed, history status changed (and content changed). The table's lists are written
by hand; each row says which (left index, right index, changes) the alignment must produce."""

import re

import pytest

from assembly.results import RequestMessage
from preview_app import services
from preview_app.compare import align_messages
from strategies_app import services as strategy_services
from strategies_app.models import Strategy
from tests.web.conftest import client_for


def msg(parts, role="system", delivery="request", status="request-only", content=None):
    parts = parts if isinstance(parts, list) else [parts]
    return RequestMessage(id="+".join(parts), role=role, delivery=delivery, history_status=status, parts=parts,
                          content=content if content is not None else "+".join(parts), tokens=1, region="",
                          enters_history=False)


MAIN, LORE, HIST, INPUT = msg("preset:main"), msg("worldbook:1"), msg("history:h1", "user", "history", "native"), \
    msg("input:i1", "user", "input", "appended")

# (label, left messages, right messages, expected rows as (left index, right index, changes) in display order)
CASES = [
    ("identical", [MAIN, HIST, INPUT], [MAIN, HIST, INPUT],
     [(0, 0, []), (1, 1, []), (2, 2, [])]),
    ("added", [MAIN, INPUT], [MAIN, LORE, INPUT],
     [(0, 0, []), (None, 1, ["added"]), (1, 2, [])]),
    ("removed", [MAIN, LORE, INPUT], [MAIN, INPUT],
     [(0, 0, []), (1, None, ["removed"]), (2, 1, [])]),
    ("moved", [LORE, MAIN, HIST, INPUT], [MAIN, HIST, LORE, INPUT],
     [(1, 0, []), (2, 1, []), (0, 2, ["moved"]), (3, 3, [])]),
    ("shifted by an insertion is not moved", [HIST, INPUT], [MAIN, HIST, INPUT],
     [(None, 0, ["added"]), (0, 1, []), (1, 2, [])]),
    ("role changed", [MAIN, msg("preset:jailbreak")], [MAIN, msg("preset:jailbreak", role="user")],
     [(0, 0, []), (1, 1, ["role"])]),
    ("delivery changed", [msg("preset:jailbreak", "user", "context", "appended")],
     [msg("preset:jailbreak", "user", "pre-step", "appended")],
     [(0, 0, ["delivery"])]),
    ("history status changed", [msg("ctx", "user", "context", "appended")], [msg("ctx", "user", "context", "reused")],
     [(0, 0, ["history_status"])]),
    ("role, delivery and history status at once", [msg("preset:jailbreak")],
     [msg("preset:jailbreak", "user", "pre-step", "appended")],
     [(0, 0, ["role", "delivery", "history_status"])]),
    ("content changed", [msg("preset:main", content="Be Ada.")], [msg("preset:main", content="Be Bea.")],
     [(0, 0, ["content"])]),
    ("moved and role changed", [msg("a"), msg("b"), msg("c")], [msg("b"), msg("c"), msg("a", role="user")],
     [(1, 0, []), (2, 1, []), (0, 2, ["moved", "role"])]),
    # Three separate system messages merged into one: the first pairs with it (its content changed), the others'
    # parts are now inside it.
    ("merged", [msg("a"), msg("b"), HIST], [msg(["a", "b"], delivery="system", status="appended"), HIST],
     [(0, 0, ["delivery", "history_status", "content"]), (1, None, ["removed"]), (2, 1, [])]),
    # Host text without parts pairs by role and content.
    ("host text without parts", [msg([], "user", "context", "appended", content="framing")],
     [msg([], "user", "context", "reused", content="framing")],
     [(0, 0, ["history_status"])]),
    ("removed at the end", [MAIN, INPUT, LORE], [MAIN, INPUT],
     [(0, 0, []), (1, 1, []), (2, None, ["removed"])]),
    ("everything replaced", [MAIN], [LORE],
     [(0, None, ["removed"]), (None, 0, ["added"])]),
]


@pytest.mark.parametrize(("label", "left", "right", "expected"), CASES, ids=[c[0] for c in CASES])
def test_alignment_marks_each_kind_of_change(label, left, right, expected):
    alignment = align_messages(left, right)
    assert [(r.a_index, r.b_index, r.changes) for r in alignment.rows] == expected
    assert alignment.identical == all(not changes for _, _, changes in expected)
    # Every message of both sides appears exactly once.
    assert sorted(r.a_index for r in alignment.rows if r.a_index is not None) == list(range(len(left)))
    assert sorted(r.b_index for r in alignment.rows if r.b_index is not None) == list(range(len(right)))


def test_a_merged_message_says_where_its_parts_went():
    rows = align_messages([msg("a"), msg("b")], [msg(["a", "b"])]).rows
    assert (rows[1].changes, rows[1].parts_with) == (["removed"], 0)
    rows = align_messages([msg(["a", "b"])], [msg("a"), msg("b")]).rows
    assert (rows[1].changes, rows[1].parts_with) == (["added"], 0)


def test_counts():
    alignment = align_messages([msg("a"), msg("b"), msg("c")], [msg("c"), msg("a", role="user"), msg("d")])
    # a,b,c -> c,a,d: a (role changed) and c swapped places, so one of them is moved; b removed, d added.
    assert alignment.counts == {"added": 1, "removed": 1, "moved": 1, "role": 1, "delivery": 0,
                                "history_status": 0, "content": 0}


# ---------------------------------------------------------------------------------------------- the page

CORE = {"format": "dsh-tavern-request-assembly", "version": 1, "backend": "core", "placement": "modules"}


def _saved(user, name, rules):
    strategy = strategy_services.strategy_create(user=user, name=name, document={**CORE, "name": name,
                                                                                   "rules": rules})
    revision, _ = strategy_services.revision_save(strategy=strategy, user=user, note="")
    return strategy, revision


def _changes_by_row(html):
    return re.findall(r'data-change="([^"]+)" data-changes="([^"]*)"', html)


def test_compare_page_shows_a_moved_message(world, users):
    """Two core strategies on the fixture's session (core available): the custom rule first, or after the history.
    The history message and the input keep their order; the custom text is marked moved."""
    designer = users["designer"]
    rules = [{"id": "note", "kind": "custom", "text": "Keep it short.", "role": "system"},
             {"id": "history", "kind": "history"}, {"id": "input", "kind": "input"}]
    first, first_rev = _saved(designer, "Note first", rules)
    after, after_rev = _saved(designer, "Note after history", [rules[1], rules[0], rules[2]])
    session = world["session"]
    url = (f"/sessions/{session.pk}/compare/?a={first.slug}@{first_rev.revision}"
           f"&b={after.slug}@{after_rev.revision}")
    html = client_for(users["qa"]).get(url).content.decode()
    assert _changes_by_row(html) == [("same", ""), ("moved", "moved"), ("same", "")]
    assert "moved #0 → #1" in html
    assert "Keep it short." in html
    # A bare revision sha names the same revision.
    by_sha = client_for(users["qa"]).get(
        f"/sessions/{session.pk}/compare/?a={first_rev.revision}&b={after_rev.revision}").content.decode()
    assert _changes_by_row(by_sha) == _changes_by_row(html)


def test_compare_page_marks_role_delivery_and_history_status(world, users):
    """The applied native strategy against the builtin-st draft: the jailbreak is a user pre-step (recorded) in the
    first and a system request-only message in the second."""
    session = world["session"]
    html = client_for(users["qa"]).get(f"/sessions/{session.pk}/compare/?a=applied&b=builtin-st").content.decode()
    jailbreak = re.search(r'<tr class="aligned[^>]*data-changes="([^"]*)"[^>]*>(?:(?!</tr>).)*Stay brief\.', html,
                          re.S)
    assert jailbreak is not None
    assert set(jailbreak.group(1).split()) >= {"role", "delivery", "history_status"}


def test_compare_with_one_refused_side_shows_its_error(world, users):
    session = world["session"]
    services.session_update(session=session, host={"core_available": False})
    response = client_for(users["qa"]).get(f"/sessions/{session.pk}/compare/?a=applied&b=builtin-st")
    assert response.status_code == 409
    assert b'data-code="REQUEST_ASSEMBLY_CORE_REQUIRED"' in response.content
    missing = client_for(users["qa"]).get(f"/sessions/{session.pk}/compare/?a=applied&b=nope")
    assert missing.status_code == 404 and b'data-code="NOT_FOUND"' in missing.content


def test_a_comparison_reads_the_session_history_once_for_both_sides(world, users):
    """The two sides differ only in their strategy, so the history (5,000 rows on a long chat) is read
    once."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    session = world["session"]
    with CaptureQueriesContext(connection) as queries:
        response = client_for(users["qa"]).get(
            f"/sessions/{session.pk}/compare/?a=applied&b=builtin-st")
    assert response.status_code == 200 and "data-changes=" in response.content.decode()
    history_reads = [q["sql"] for q in queries.captured_queries
                     if 'FROM "preview_app_sessionevent"' in q["sql"] and '"content"' in q["sql"]]
    assert len(history_reads) == 1


@pytest.mark.parametrize(("language", "tokens", "shown"), [
    ("en", 1, "1 token<"), ("en", 1234, "1,234 tokens<"), ("zh-hans", 1, "1 个 token<"), ("zh-hans", 3, "3 个 token<")])
def test_an_aligned_message_counts_its_tokens_in_the_right_number(language, tokens, shown):
    from django.template.loader import render_to_string
    from django.utils import translation

    message = msg("preset:main")
    message.tokens = tokens
    with translation.override(language):
        html = render_to_string("preview/_aligned_message.html", {"m": message, "index": 0})
    assert f'<span class="muted">{shown}/span>' in html
    if language == "en" and tokens == 1:
        assert "1 tokens" not in html


def _core_refusal(page: str) -> str:
    return re.search(r'<div class="refusal"[^>]*data-code="REQUEST_ASSEMBLY_CORE_REQUIRED".*?</div>', page, re.S).group()


@pytest.mark.parametrize("path", ["compare/?a=builtin-native-slots&b=applied", "preview/"])
def test_a_core_refusal_on_a_chinese_page_reads_in_chinese_and_names_the_setting_by_its_label(world, users, path):
    session = world["session"]
    services.strategy_apply(session=session, strategy=Strategy.objects.get(slug="builtin-st"))
    services.session_update(session=session, host={"core_available": False})
    response = client_for(users["qa"]).get(f"/sessions/{session.pk}/{path}", HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert response.status_code == 409
    refusal = _core_refusal(response.content.decode())
    assert "“宿主具备进阶（core）后端”" in refusal and "core available" not in refusal
    assert 'lang="en"' not in refusal and "requires the optional core" not in refusal
    assert "组装扩展（<code>host.core_available</code> 为 <code>false</code>）" in refusal
    english = client_for(users["qa"]).get(f"/sessions/{session.pk}/{path}")
    assert 'Turn on "The host has the advanced (core) backend"' in _core_refusal(english.content.decode()).replace(
        "&quot;", '"')


@pytest.mark.parametrize(("language", "words"), [("en", "</a> (preset slots first) · "),
                                                 ("zh-hans", "</a>（预设插槽优先） · ")])
def test_a_compared_side_names_its_backend_and_placement_as_the_preview_does(world, users, language, words):
    session, client = world["session"], client_for(users["qa"])
    compare = client.get(f"/sessions/{session.pk}/compare/?a=applied&b=builtin-st",
                         HTTP_ACCEPT_LANGUAGE=language).content.decode()
    preview = client.get(f"/sessions/{session.pk}/preview/", HTTP_ACCEPT_LANGUAGE=language).content.decode()
    assert words in compare and "(native-slots)" not in compare
    assert words.removesuffix(" · ") in preview


def test_a_comparison_holds_both_sides_to_the_budget_it_is_given_and_their_previews_ask_the_same(world, users):
    """web.md screen 4 beside screen 3's budget: the window, the reply's reserve and the eviction plan apply to both
    sides, and each side's preview link asks with them, so the preview shows the request the comparison showed."""
    session = world["session"]
    for number in range(6):
        services.event_append(session=session, role=("user", "assistant")[number % 2],
                              content=f"Message {number}: " + "the old lighthouse keeper trims his lamp. " * 3)
    client = client_for(users["qa"])
    window = "context_window=120&reserve_output=10"
    html = client.get(f"/sessions/{session.pk}/compare/?a=applied&b=builtin-st&{window}&apply_budget=on"
                      ).content.decode()
    assert html.count('data-context-window="120" data-reply-reserve="10"') == 2
    links = re.findall(r'<a href="([^"]+)">Open its preview</a>', html)
    assert len(links) == 2 and all(f"{window}&apply_budget=on".replace("&", "&amp;") in link for link in links)
    shown = [int(count) for count in re.findall(r"(\d+) messages? · ", html)]
    for link, count in zip(links, shown, strict=True):
        preview = client.get(link.replace("&amp;", "&")).content.decode()
        assert 'data-context-window="120"' in preview
        assert len(re.findall(r'<tbody class="msg ', preview)) == count
    # the plan applied: each side sends less than it does when the same window is only checked
    checked = client.get(f"/sessions/{session.pk}/compare/?a=applied&b=builtin-st&{window}").content.decode()
    assert all(a < int(b) for a, b in zip(shown, re.findall(r"(\d+) messages? · ", checked), strict=True))
