"""The session, preview, compare and goldens pages (web.md screens 3, 4, 5, 7): every route answers each role as the
permission table says, forged and CSRF-less writes change nothing, content is always escaped, the preview carries
the testable markup and costs the same number of queries however long the history is."""

import json
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test.utils import CaptureQueriesContext

from preview_app import services
from preview_app.models import GoldenSnapshot, Session, SessionEvent
from strategies_app import services as strategy_services
from strategies_app.models import Preset, Strategy, WorldBook
from tests.web.conftest import client_for, csrf_client_for, make_user

CALLERS = ("anonymous", "qa", "designer", "admin")
LOGIN = "/accounts/login/"


def _session_form(**overrides):
    data = {"name": "Renamed", "preset": "", "character": "", "persona": "", "system_prompt_update": "head",
            "core_available": "on", "native_available": "on", "official_sections": "", "contexts": "",
            "variables": "", "current_input": "Hi again", "strategy": "builtin-st"}
    return {**data, **overrides}


def _event_form(prefix, **overrides):
    data = {"role": "assistant", "content": "Sure.", "name": "", "tool_calls": "", "tool_call_id": ""}
    return {f"{prefix}-{key}": value for key, value in {**data, **overrides}.items()}


# (label, method, url(world), data(world) or None, expected per caller: a status, or "done" = the 302 of a
# completed write, "login" = the 302 to the login page)
PAGES = [
    ("sessions", "get", lambda w: "/sessions/", None, ("login", 200, 200, 200)),
    ("new session form", "get", lambda w: "/sessions/new/", None, ("login", 403, 200, 200)),
    ("session", "get", lambda w: f"/sessions/{w['session'].pk}/", None, ("login", 200, 200, 200)),
    ("preview", "get", lambda w: f"/sessions/{w['session'].pk}/preview/", None, ("login", 200, 200, 200)),
    ("preview of a built-in draft", "get", lambda w: f"/sessions/{w['session'].pk}/preview/?strategy=builtin-st",
     None, ("login", 200, 200, 200)),
    ("preview of a revision", "get",
     lambda w: f"/sessions/{w['session'].pk}/preview/?strategy={w['own'].slug}&revision={w['revision'].revision}",
     None, ("login", 200, 200, 200)),
    ("preview with a budget", "get",
     lambda w: f"/sessions/{w['session'].pk}/preview/?context_window=20&reserve_output=5", None,
     ("login", 200, 200, 200)),
    ("export result", "get", lambda w: f"/sessions/{w['session'].pk}/preview/result.json", None,
     ("login", 200, 200, 200)),
    ("export messages", "get", lambda w: f"/sessions/{w['session'].pk}/preview/messages.json", None,
     ("login", 200, 200, 200)),
    ("compare", "get", lambda w: f"/sessions/{w['session'].pk}/compare/?a=applied&b=builtin-st", None,
     ("login", 200, 200, 200)),
    ("compare form", "get", lambda w: f"/sessions/{w['session'].pk}/compare/", None, ("login", 200, 200, 200)),
    ("goldens", "get", lambda w: "/goldens/", None, ("login", 200, 200, 200)),
    ("goldens of a session", "get", lambda w: f"/goldens/?session={w['session'].pk}", None,
     ("login", 200, 200, 200)),
    ("create session", "post", lambda w: "/sessions/new/", lambda w: _session_form(name="Made here"),
     ("login", 403, "done", "done")),
    ("edit session", "post", lambda w: f"/sessions/{w['session'].pk}/edit/", lambda w: _session_form(),
     ("login", 403, "done", "done")),
    ("add message", "post", lambda w: f"/sessions/{w['session'].pk}/events/", lambda w: _event_form("new"),
     ("login", 403, "done", "done")),
    ("edit message", "post", lambda w: f"/sessions/{w['session'].pk}/events/{w['event'].seq}/",
     lambda w: _event_form(f"e{w['event'].seq}", role="user", content="Edited"), ("login", 403, "done", "done")),
    # the world's session already has a message, so a greeting is refused (409) for those who may edit it
    ("greet", "post", lambda w: f"/sessions/{w['session'].pk}/greet/", lambda w: {"greeting": "0"},
     ("login", 403, 409, 409)),
    ("import chat", "post", lambda w: f"/sessions/{w['session'].pk}/chat/import/", lambda w: {
        "file": SimpleUploadedFile("c.jsonl", b'{"name": "A", "is_user": true, "mes": "hi"}')},
     ("login", 403, "done", "done")),
    ("copy session", "post", lambda w: f"/sessions/{w['session'].pk}/copy/", lambda w: {},
     ("login", 403, "done", "done")),
    ("export chat", "get", lambda w: f"/sessions/{w['session'].pk}/chat.jsonl", None, ("login", 200, 200, 200)),
    # the world's session has a golden, so deleting it is refused (409) for those who may edit it
    ("delete session", "post", lambda w: f"/sessions/{w['session'].pk}/delete/", lambda w: {},
     ("login", 403, 409, 409)),
    ("move message", "post", lambda w: f"/sessions/{w['session'].pk}/events/{w['event'].seq}/move/",
     lambda w: {"direction": "down"}, ("login", 403, "done", "done")),
    ("delete message", "post", lambda w: f"/sessions/{w['session'].pk}/events/{w['event'].seq}/delete/",
     lambda w: {}, ("login", 403, "done", "done")),
    ("apply strategy", "post", lambda w: f"/sessions/{w['session'].pk}/apply/", lambda w: {"choice": "builtin-st"},
     ("login", 403, "done", "done")),
    ("commit turn", "post", lambda w: f"/sessions/{w['session'].pk}/commit/", lambda w: {"reply": "Hello back"},
     ("login", 403, "done", "done")),
    ("pin golden", "post", lambda w: "/goldens/pin/",
     lambda w: {"session": w["session"].pk, "strategy": w["own"].slug, "revision": w["revision"].revision},
     ("login", "done", 403, "done")),
]


@pytest.mark.parametrize("caller", CALLERS)
@pytest.mark.parametrize(("label", "method", "url", "data", "expected"), PAGES, ids=[p[0] for p in PAGES])
def test_page_by_role(world, users, caller, label, method, url, data, expected):
    client = client_for(None if caller == "anonymous" else users[caller])
    kwargs = {"data": data(world)} if data is not None else {}
    response = getattr(client, method)(url(world), **kwargs)
    want = expected[CALLERS.index(caller)]
    if want == "login":
        assert response.status_code == 302 and response["Location"].startswith(LOGIN)
    elif want == "done":
        assert response.status_code == 302, response.content[:500]
        assert not response["Location"].startswith(LOGIN)
    else:
        assert response.status_code == want, response.content[:500]


def test_refused_writes_change_nothing(world, users):
    """QA's forged writes are 403 and leave the session, its history, its selection and the goldens as they were."""
    session, event = world["session"], world["event"]

    def state():
        s = Session.objects.get(pk=session.pk)
        return (s.name, s.current_input, s.applied_document, s.host,
                list(SessionEvent.objects.filter(session=s).values_list("seq", "role", "content")),
                list(GoldenSnapshot.objects.values_list("pk", "revision_id")))

    before = state()
    qa = client_for(users["qa"])
    for url, data in [(f"/sessions/{session.pk}/edit/", _session_form()),
                      (f"/sessions/{session.pk}/events/", _event_form("new")),
                      (f"/sessions/{session.pk}/events/{event.seq}/", _event_form(f"e{event.seq}")),
                      (f"/sessions/{session.pk}/events/{event.seq}/move/", {"direction": "up"}),
                      (f"/sessions/{session.pk}/events/{event.seq}/delete/", {}),
                      (f"/sessions/{session.pk}/apply/", {"choice": "off"}),
                      (f"/sessions/{session.pk}/commit/", {"reply": "x"})]:
        response = qa.post(url, data)
        assert response.status_code == 403, url
        assert b'data-code="FORBIDDEN"' in response.content
    designer = client_for(users["designer"])
    assert designer.post("/goldens/pin/", {"session": session.pk, "strategy": world["own"].slug,
                                           "revision": world["revision"].revision}).status_code == 403
    assert state() == before


def test_another_designers_session_is_read_only_for_a_designer_and_writable_for_an_admin(world, users):
    other = make_user("designer-two", "designer")
    session = world["session"]
    response = client_for(other).post(f"/sessions/{session.pk}/edit/", _session_form(name="Taken over"))
    assert response.status_code == 403
    assert Session.objects.get(pk=session.pk).name == "Designer's session"
    page = client_for(other).get(f"/sessions/{session.pk}/")
    assert b'data-read-only="true"' in page.content and b"Commit turn" not in page.content
    assert client_for(users["admin"]).post(f"/sessions/{session.pk}/edit/",
                                           _session_form(name="Admin's now")).status_code == 302
    assert Session.objects.get(pk=session.pk).name == "Admin's now"


def test_a_write_without_the_csrf_token_is_refused(world, users):
    session = world["session"]
    client = csrf_client_for(users["designer"])
    assert client.post(f"/sessions/{session.pk}/commit/", {"reply": "no token"}).status_code == 403
    assert client.post("/goldens/pin/", {"session": session.pk}).status_code == 403
    assert not SessionEvent.objects.filter(content="no token").exists()
    # With the token from the page the same write goes through.
    page = client.get(f"/sessions/{session.pk}/")
    token = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', page.content).group(1).decode()
    response = client.post(f"/sessions/{session.pk}/commit/", {"reply": "with token", "csrfmiddlewaretoken": token})
    assert response.status_code == 302
    assert SessionEvent.objects.filter(session=session, role="assistant", content="with token").exists()


def test_qa_sees_the_preview_without_any_edit_control(world, users):
    session = world["session"]
    page = client_for(users["qa"]).get(f"/sessions/{session.pk}/preview/").content.decode()
    assert "Pin again as golden" in page  # the fixture's QA already approved this revision
    assert "/commit/" not in page and "Commit turn" not in page
    detail = client_for(users["qa"]).get(f"/sessions/{session.pk}/").content.decode()
    for control in ("/edit/", "/events/", "/apply/", "/commit/", "/move/", "/delete/"):
        assert control not in detail


# ---------------------------------------------------------------------------------------------- escaping

SCRIPT = "<script>alert(1)</script>"
ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;"


def test_script_in_a_prompt_and_in_a_chat_message_renders_as_text(world, users):
    """A preset prompt and a history message both hold <script>: every page shows it as text, never as markup."""
    session = world["session"]
    preset = strategy_services.preset_import(user=users["admin"], data={"prompts": [
        {"identifier": "main", "role": "system", "content": f"Rules {SCRIPT}"},
        {"identifier": "chatHistory", "marker": True}]}, name=f"Preset {SCRIPT}")
    services.session_update(session=session, preset=Preset.objects.get(pk=preset.id), name=f"Session {SCRIPT}")
    services.event_append(session=session, role="user", content=f"Chat {SCRIPT}", name="")
    client = client_for(users["qa"])
    pages = [f"/sessions/{session.pk}/preview/", f"/sessions/{session.pk}/", "/sessions/",
             f"/sessions/{session.pk}/compare/?a=applied&b=builtin-st"]
    for url in pages:
        html = client.get(url).content.decode()
        assert SCRIPT not in html, url
        assert ESCAPED in html, url
    preview = client.get(pages[0]).content.decode()
    assert f"Rules {ESCAPED}" in preview and f"Chat {ESCAPED}" in preview
    # The golden approved before the change now differs, and its diff shows the text escaped too.
    goldens = client.get("/goldens/").content.decode()
    assert SCRIPT not in goldens and ESCAPED in goldens


# ---------------------------------------------------------------------------------------------- the preview


def _rows(html):
    """(data-index, data-role, data-delivery, data-history-status) of every request message row."""
    return re.findall(r'<tbody class="msg[^"]*"[^>]*data-index="(\d+)" data-role="([^"]+)" '
                      r'data-delivery="([^"]+)" data-region="[^"]+" data-history-status="([^"]+)"', html)


def test_preview_rows_say_role_delivery_and_history_entry(world, users):
    """The designer's strategy is a copy of builtin-native-slots on the fixture's session (native backend): one
    system message made by the preset and resources, the history message, the input, and the jailbreak after the
    input as a user pre-step (the standard backend cannot send system text after the input)."""
    session = world["session"]
    html = client_for(users["qa"]).get(f"/sessions/{session.pk}/preview/").content.decode()
    rows = _rows(html)
    assert rows == [("0", "system", "system", "appended"), ("1", "user", "history", "native"),
                    ("2", "user", "input", "appended"), ("3", "user", "pre-step", "appended")]
    assert "Earlier" in html and "Hello" in html and "Stay brief." in html
    # The system message's parts: Main Prompt with its macro expanded, the persona, the world book entry and the
    # character's description; the conversation messages are locked where the host puts them.
    assert "Be Ada." in html
    parts = re.findall(r'data-part-id="([^"]+)"', html)
    assert parts == ["preset:main", "persona:persona", "worldbook:1", "character:description",
                     f"history:{world['event'].message_id}", f"input:s{session.pk}e2",
                     "preset:jailbreak"]
    assert html.count('data-lock-reason="runtime"') == 2
    # The jailbreak's role changed from system to user, and the diagnostic says so in words.
    assert '<span class="changed">system → user</span>' in html
    assert 'data-code="NATIVE_ROLE_ADJUSTED"' in html
    assert "decides its role" in html
    # World book entry "Gate" is in, with its activation reason.
    assert 'data-wb-entry="1" data-wb-state="in"' in html
    # Durable events: the new system prompt record, the input and the pre-step message.
    assert re.findall(r'data-event-kind="([^"]+)"', html) == ["system-prompt", "user", "dsh-prompt-assembler"]
    assert 'data-starts-request-series="false"' in html


def test_long_content_is_collapsed_and_short_content_is_not(world, users):
    session = world["session"]
    services.event_append(session=session, role="assistant", content="word " * 400, name="")
    html = client_for(users["qa"]).get(f"/sessions/{session.pk}/preview/").content.decode()
    assert html.count('<details class="content-fold">') == 1  # the long reply; the short ones stay open
    assert "show all 2000 characters" in html
    assert '<pre class="content">Earlier</pre>' in html


def test_preview_of_another_strategy_and_revision_by_query(world, users):
    session = world["session"]
    client = client_for(users["qa"])
    html = client.get(f"/sessions/{session.pk}/preview/?strategy=builtin-st").content.decode()
    assert 'data-backend="core"' in html
    assert all(delivery in ("request", "history", "input") for _, _, delivery, _ in _rows(html))
    assert "working draft" in html and "A working draft cannot be pinned" in html
    # The picker's GET form turns into the bookmarkable URL.
    response = client.get(f"/sessions/{session.pk}/preview/?pick={world['own'].slug}@{world['revision'].revision}")
    assert response.status_code == 302
    assert response["Location"] == (f"/sessions/{session.pk}/preview/?strategy={world['own'].slug}"
                                    f"&revision={world['revision'].revision}")
    assert client.get(f"/sessions/{session.pk}/preview/?pick=applied")["Location"] == \
        f"/sessions/{session.pk}/preview/"


@pytest.mark.parametrize(("query", "status", "code"), [
    ("?strategy=no-such-strategy", 404, "NOT_FOUND"),
    ("?strategy=builtin-st&revision=" + "0" * 64, 404, "NOT_FOUND"),
    ("?revision=" + "0" * 64, 400, "INPUT_INVALID"),
])
def test_a_bad_choice_is_an_error_panel_with_its_status(world, users, query, status, code):
    response = client_for(users["qa"]).get(f"/sessions/{world['session'].pk}/preview/{query}")
    assert response.status_code == status
    assert f'data-code="{code}"'.encode() in response.content


def test_assembly_off_and_core_required_are_explained(world, users):
    session = world["session"]
    services.session_update(session=session, host={"core_available": False})
    client = client_for(users["qa"])
    response = client.get(f"/sessions/{session.pk}/preview/?strategy=builtin-st")
    assert response.status_code == 409
    assert b'data-code="REQUEST_ASSEMBLY_CORE_REQUIRED"' in response.content
    assert b"needs the advanced (core) backend" in response.content
    services.strategy_apply(session=session, strategy=None)
    response = client.get(f"/sessions/{session.pk}/preview/")  # an offer, not a bare 409
    assert response.status_code == 200 and b"data-assembly-off" in response.content
    assert b"data-apply-strategy" not in response.content  # QA cannot apply; the page says who can


def test_budget_bar_and_eviction_plan(world, users):
    """A 20-token window with 5 reserved (limit 15) is below the request: the page shows the total against the limit,
    the amount over, and the engine's eviction plan, item by item, which never holds the input."""
    from assembly import assemble
    from preview_app.previews import session_request, strategy_document

    session = world["session"]
    html = client_for(users["qa"]).get(
        f"/sessions/{session.pk}/preview/?context_window=20&reserve_output=5").content.decode()
    request = session_request(session, strategy_document(session.applied_strategy, session.applied_document))
    budget = assemble({**request, "budget": {"context_window": 20, "reserve_output": 5}}).budget
    assert budget.limit == 15 and budget.over_by == budget.total - 15 > 0
    assert 'data-code="CONTEXT_BUDGET_EXCEEDED"' in html
    assert f'data-over-by="{budget.over_by}"' in html and f"Over by {budget.over_by}." in html
    plan = re.findall(r'data-evict="([^"]+)"', html)
    assert plan == [item.id for item in budget.eviction_plan] and plan
    assert not any(item.startswith("input:") for item in plan)
    assert 'class="budget-bar over"' in html
    # The budget stays in the picker and the export links, so switching strategy keeps it.
    assert 'name="context_window" value="20"' in html
    bad = client_for(users["qa"]).get(f"/sessions/{session.pk}/preview/?context_window=0")
    assert bad.status_code == 400


def test_exports_are_the_result_and_the_plain_messages(world, users):
    session = world["session"]
    client = client_for(users["qa"])
    result = json.loads(client.get(f"/sessions/{session.pk}/preview/result.json").content)
    api = client.get(f"/api/sessions/{session.pk}/preview").json()
    assert result == api
    plain = client.get(f"/sessions/{session.pk}/preview/messages.json")
    assert plain["Content-Disposition"].startswith('attachment; filename="session-')
    messages = json.loads(plain.content)["messages"]
    assert messages == [{"role": m["role"], "content": m["content"]} for m in api["request"]["messages"]]
    missing = client.get(f"/sessions/{session.pk}/preview/result.json?strategy=nope")
    assert missing.status_code == 404 and missing.json()["code"] == "NOT_FOUND"
    assert client.get(f"/sessions/{session.pk}/preview/other.json").status_code == 404


def test_unknown_session_is_a_404_page(world, users):
    for url in ("/sessions/999999/", "/sessions/999999/preview/", "/sessions/999999/compare/"):
        response = client_for(users["qa"]).get(url)
        assert response.status_code == 404 and b'data-code="NOT_FOUND"' in response.content


# ---------------------------------------------------------------------------------------------- query counts


def _preview_queries(client, session):
    with CaptureQueriesContext(connection) as captured:
        response = client.get(f"/sessions/{session.pk}/preview/")
    assert response.status_code == 200
    return len(captured)


def test_preview_queries_do_not_grow_with_the_history(world, users, django_assert_max_num_queries):
    session = world["session"]
    client = client_for(users["qa"])
    client.get(f"/sessions/{session.pk}/preview/")  # warm the session and permission caches alike for both runs
    few = _preview_queries(client, session)
    for number in range(120):
        services.event_append(session=session, role="user" if number % 2 else "assistant", content=f"m{number}",
                              name="")
    many = _preview_queries(client, session)
    assert many == few
    with django_assert_max_num_queries(few):
        client.get(f"/sessions/{session.pk}/preview/")
    html = client.get(f"/sessions/{session.pk}/preview/").content.decode()
    folded = sum(int(n) for n in re.findall(r'data-collapsed-range="[^"]+" data-count="(\d+)"', html))
    assert len(_rows(html)) + folded == 4 + 120  # a long run of plain history is folded into one row


# ---------------------------------------------------------------------------------------------- home


def test_home_links_to_the_session_pages(world, users):
    html = client_for(users["qa"]).get("/").content.decode()
    assert f'href="/sessions/{world["session"].pk}/"' in html
    assert f'href="/sessions/{world["session"].pk}/preview/"' in html
    # strategies open in the editor (read-only for QA), not as raw JSON; the resources heading opens their page
    assert f'href="/strategies/{world["own"].slug}/edit/"' in html and "/api/strategies/" not in html
    assert 'href="/resources/"' in html


@pytest.mark.parametrize(("language", "name", "role"), [
    ("en", "Preset slots first (advanced)", "QA"), ("zh-hans", "预设插槽优先（进阶）", None)])
def test_home_names_the_applied_strategy_and_the_role_in_words(users, language, name, role):
    session = services.session_create(user=users["designer"], name="Storm", host={"core_available": True})
    services.strategy_apply(session=session, strategy=Strategy.objects.get(slug="builtin-st"))
    client = client_for(users["qa"])
    client.cookies["django_language"] = language
    html = client.get("/").content.decode()
    item = html[html.index(f'data-session-id="{session.pk}"'):].split("</li>", 1)[0]
    assert f'data-applied-strategy="builtin-st">{name}</span>' in item and ": builtin-st" not in item
    roles = re.search(r'<span class="muted" data-roles="qa">([^<]*)</span>', html).group(1)
    assert roles.endswith(role or "QA") and not roles.endswith(" qa")


def test_strategy_list_in_the_pickers_includes_drafts_and_revisions(world, users):
    html = client_for(users["qa"]).get(f"/sessions/{world['session'].pk}/compare/").content.decode()
    own = world["own"]
    assert f'<option value="{own.slug}">' in html
    assert f'<option value="{own.slug}@{world["revision"].revision}">' in html
    for builtin in Strategy.objects.filter(builtin=True):
        assert f'<option value="{builtin.slug}">' in html


def test_world_book_entries_in_and_out_with_their_reasons(world, users):
    """Keyword activation: "gate" is in the chat, "dragon" is not; the page lists both, each with why."""
    from strategies_app.models import WorldBook

    book = strategy_services.worldbook_import(user=users["admin"], data={"activation": "keywords", "entries": {
        "1": {"uid": 1, "key": ["gate"], "comment": "Gate", "content": "The gate is shut at night.", "position": 0},
        "2": {"uid": 2, "key": ["dragon"], "comment": "Dragon", "content": "A dragon sleeps.", "position": 0}}},
        name="Keyword book")
    session = world["session"]
    services.session_update(session=session, world_books=[WorldBook.objects.get(pk=book.id)])
    services.event_append(session=session, role="user", content="Is the gate open?", name="")
    html = client_for(users["qa"]).get(f"/sessions/{session.pk}/preview/").content.decode()
    entries = re.findall(r'data-wb-entry="(\d+)" data-wb-state="(in|out)"><strong>([^<]+)</strong> '
                         r'<span class="muted small">([^<]+)</span>', html)
    assert [(uid, state, name) for uid, state, name, _ in entries] == [("1", "in", "Gate"), ("2", "out", "Dragon")]
    assert "gate" in entries[0][3] and "no primary key found" in entries[1][3]
    assert "Keyword activation" in html
    assert "The gate is shut at night." in html and "A dragon sleeps." not in html


def test_runtime_context_controls_and_the_context_snapshot(world, users):
    """The host gives two DSH contexts; the strategy switches the sandbox one off. The page lists both controls, and
    only the approval policy reaches the runtime-context message (a user message delivered as context)."""
    own = world["own"]
    own.refresh_from_db()
    draft = {**own.draft, "rules": [*own.draft["rules"], {"id": "sandbox", "kind": "dsh.sandbox-policy",
                                                          "enabled": False}]}
    strategy_services.draft_update(strategy=own, user=users["designer"], document=draft,
                                   expected_version=own.version)
    session = world["session"]
    services.session_update(session=session, host={"core_available": True, "contexts": [
        {"name": "sandbox:policy", "text": "Sandbox: read-only."},
        {"name": "approval:policy", "text": "Approval: ask first."}]})
    html = client_for(users["qa"]).get(f"/sessions/{session.pk}/preview/?strategy={own.slug}").content.decode()
    controls = re.findall(r'<li data-context="([^"]+)"><code>[^<]+</code> <span class="chip[^"]*">([^<]+)</span>',
                          html)
    assert controls == [("sandbox:policy", "removed by the strategy"), ("approval:policy", "sent")]
    context_rows = [row for row in _rows(html) if row[2] == "context"]
    assert [(role, status) for _, role, _, status in context_rows] == [("user", "appended")]
    assert "Approval: ask first." in html and "Sandbox: read-only." not in html


def test_history_entry_is_in_words_per_row_and_as_totals(world, users):
    """What persists is read at a glance (web.md screen 3); data-history-status keeps the stable value."""
    html = client_for(users["qa"]).get(f"/sessions/{world['session'].pk}/preview/").content.decode()
    rows = re.findall(r'data-history-status="([^"]+)"[^>]*>.*?<td class="history-entry"><span class="entry '
                      r'status-\1">([^<]+)</span>', html, re.S)
    words = {"native": "kept: already in history", "appended": "kept: added to history by this request",
             "request-only": "sent once (request only)", "reused": "snapshot reused",
             "snapshot": "kept: added to history as a snapshot"}
    assert rows and all(words[status] == text for status, text in rows)
    assert "enters history" not in html
    totals = dict(re.findall(r'data-history-total="([^"]+)"><dt><span[^>]*>[^<]+</span></dt><dd>(\d+) message', html))
    counted: dict[str, int] = {}
    for status, _text in rows:
        counted[status] = counted.get(status, 0) + 1
    assert {status: int(n) for status, n in totals.items()} == counted


def test_the_preview_projects_turns_and_names_a_pre_step_that_piles_up(world, users):
    """The standard backend keeps the post-history instructions as a pre-step every turn (engine.md §7). The
    projection is its own request: the preview page loads it (htmx) from a link that works without JS."""
    client = client_for(users["qa"])
    html = client.get(f"/sessions/{world['session'].pk}/preview/").content.decode()
    assert 'data-turn-projection data-turns="5"' in html
    link = re.search(r'data-projection-url="([^"]+)" hx-get="\1" hx-trigger="load"', html).group(1)
    assert f'<a href="{link}">' in html and "<tr data-turn=" not in html  # nothing projected on the page itself
    page = client.get(link).content.decode()
    assert 'data-turn-projection data-turns="5"' in page
    assert len(re.findall(r'<tr data-turn="\d+"', page)) == 6
    assert 'data-code="PRE_STEP_ACCUMULATES"' in page and "Stay brief." in page.split("data-turn-projection")[1]
    fragment = client.get(link, HTTP_HX_REQUEST="true").content.decode()
    assert fragment.lstrip().startswith("<section") and 'data-code="PRE_STEP_ACCUMULATES"' in fragment
    assert "<html" not in fragment and 'hx-trigger="load"' not in fragment  # swapped in once, not again
    three = client.get(f"/sessions/{world['session'].pk}/preview/projection/?turns=3").content.decode()
    assert 'data-turns="3"' in three and len(re.findall(r'<tr data-turn="\d+"', three)) == 4
    asked = client.get(f"/sessions/{world['session'].pk}/preview/?turns=3").content.decode()
    assert 'data-turns="3"' in asked and "preview/projection/?turns=3" in asked
    bad = client.get(f"/sessions/{world['session'].pk}/preview/projection/?turns=99")
    assert bad.status_code == 400 and "turns: expected a whole number from 1 to 20" in bad.content.decode()


def test_an_evicted_chat_message_is_named_by_its_role_and_opening_words(world, users):
    session = world["session"]
    html = client_for(users["qa"]).get(f"/sessions/{session.pk}/preview/?strategy=builtin-st&context_window=20"
                                       "&reserve_output=0").content.decode()
    assert re.search(r'data-evict="history:[^"]+"><strong>user: “Earlier”</strong>', html)


@pytest.mark.parametrize(("language", "label"), [
    ("en", "held by the <code>worldInfoBefore</code> slot of the preset"),
    ("zh-hans", "由预设的 <code>worldInfoBefore</code> 插槽持有")])
def test_a_part_held_by_a_preset_slot_names_the_slot_as_code(world, users, language, label):
    preset = strategy_services.preset_import(user=users["admin"], data={"prompts": [
        {"identifier": "main", "role": "system", "content": "Be brief."},
        {"identifier": "worldInfoBefore", "marker": True}, {"identifier": "chatHistory", "marker": True}]},
        name="Slot preset")
    session = services.session_create(
        user=users["designer"], name="Slots", current_input="Hello", preset=Preset.objects.get(pk=preset.id),
        world_books=[WorldBook.objects.get(pk=world["session"].world_books.first().pk)])
    services.strategy_apply(session=session, strategy=Strategy.objects.get(slug="builtin-native-slots"))
    html = client_for(users["designer"]).get(f"/sessions/{session.pk}/preview/",
                                             HTTP_ACCEPT_LANGUAGE=language).content.decode()
    lock = re.search(r'data-lock-reason="reference:preset"><span class="lock-badge">[^<]*</span> (.*?)</span></td>',
                     html).group(1)
    assert lock == label
