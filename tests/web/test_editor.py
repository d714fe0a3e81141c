"""The strategy editor's pages and writes (web.md screens 1-2): every route for every role, the refusals
(stale version, a locked row moved, an order that is not a permutation, unknown ids) answered 409 with nothing
written, what each accepted edit stores, the lock reasons in words, escaping, htmx partials and the no-JS path."""

import re

import pytest
from django.utils import translation

from assembly.edits import position_keys
from preview_app import services as session_services
from preview_app.models import Session
from strategies_app import services
from strategies_app.models import Persona, Preset, Strategy, StrategyRevision
from tests.web.conftest import client_for, csrf_client_for

HTMX = {"HTTP_HX_REQUEST": "true"}
# A preset whose markers hold the character description and the world info "before" group, and whose main prompt
# pulls the persona in through {{persona}}: three kinds of locked rows, all from the engine, in one session.
LOCKING_PRESET = {"prompts": [
    {"identifier": "main", "name": "Main Prompt", "role": "system", "content": "Speak as {{char}}. {{persona}}"},
    {"identifier": "worldInfoBefore", "name": "World Info (before)", "marker": True},
    {"identifier": "charDescription", "name": "Char Description", "marker": True},
    {"identifier": "chatHistory", "name": "Chat History", "marker": True},
    {"identifier": "jailbreak", "name": "Post-History Instructions", "role": "system", "content": "Be brief."}]}


@pytest.fixture
def editor(users):
    """The designer's copy of builtin-native-slots and a native session (no core) whose preset locks rows."""
    designer, admin = users["designer"], users["admin"]
    strategy = services.strategy_copy(user=designer, source=Strategy.objects.get(slug="builtin-native-slots"),
                                      name="Slots copy")
    services.revision_save(strategy=strategy, user=designer, note="first")
    others = services.strategy_copy(user=admin, source=Strategy.objects.get(slug="builtin-native-slots"),
                                    name="Admin's copy")
    preset = services.preset_import(user=admin, data=LOCKING_PRESET, name="Locking preset")
    persona = services.persona_import(user=admin, data={"name": "Sam", "description": "A visitor from the coast."})
    character = services.character_import(user=admin, data={"spec": "chara_card_v2", "spec_version": "2.0", "data": {
        "name": "Ada", "description": "An engineer who fixes lighthouses."}})
    book = services.worldbook_import(user=admin, name="Book", data={"entries": {"1": {
        "uid": 1, "key": ["lamp"], "comment": "Lamp lore", "content": "The lamp burns oil.", "constant": True,
        "position": 0}}})
    from strategies_app.models import Character, WorldBook

    session = session_services.session_create(
        user=designer, name="Locking session", current_input="Hello there",
        preset=Preset.objects.get(pk=preset.id), persona=Persona.objects.get(pk=persona.id),
        character=Character.objects.get(pk=character.id), world_books=[WorldBook.objects.get(pk=book.id)])
    return {"strategy": strategy, "others": others, "session": session}


def _fresh(strategy):
    return Strategy.objects.get(pk=strategy.pk)


def _post(client, url, data, htmx=False):
    return client.post(url, data, **(HTMX if htmx else {}))


def _position_keys(strategy):
    return position_keys(draft=_fresh(strategy).draft)


def _url(strategy, name):
    return f"/strategies/{strategy.slug}/{name}"


# ---------------------------------------------------------------------------------------------- pages x roles


@pytest.mark.parametrize("caller", ["anonymous", "qa", "designer", "admin"])
def test_pages_are_read_by_every_role_and_anonymous_callers_go_to_the_login(users, editor, caller):
    client = client_for(None if caller == "anonymous" else users[caller])
    slug = editor["strategy"].slug
    for url in ("/strategies/", f"/strategies/{slug}/edit/", "/strategies/builtin-st/edit/",
                f"/strategies/{slug}/revisions/", f"/strategies/{slug}/revisions/?a=draft&b=draft"):
        response = client.get(url)
        if caller == "anonymous":
            assert response.status_code == 302 and response["Location"].startswith("/accounts/login/"), url
        else:
            assert response.status_code == 200, (url, response.status_code)


def test_an_unknown_strategy_is_404(users):
    assert client_for(users["designer"]).get("/strategies/no-such-thing/edit/").status_code == 404
    assert client_for(users["designer"]).post("/strategies/no-such-thing/rules/order/", {"version": 1}).status_code \
        == 404


def _write_requests(strategy):
    """(label, url, data) of every editor write, each valid for a draft at `strategy.version`."""
    rules = [r["id"] for r in strategy.draft["rules"]]
    keys = position_keys(draft=strategy.draft)
    version = strategy.version
    return [
        ("rules order", "rules/order/", {"version": version, "order": list(reversed(rules))}),
        ("rule move", "rules/order/", {"version": version, "row": "phi", "direction": "up"}),
        ("rule update", "rules/phi/edit/", {"version": version, "enabled": ["false"]}),
        ("rule add", "rules/add/", {"version": version, "kind": "custom", "name": "Note", "text": "Hi"}),
        ("control", "controls/", {"version": version, "kind": "dsh.sandbox-policy", "enabled": ["false"]}),
        ("positions order", "positions/order/", {"version": version, "row": "preset#jailbreak", "direction": "up"}),
        ("position update", "positions/", {"version": version, "key": keys[0], "enabled": ["false"],
                                           "placement": "source"}),
        ("priority order", "priority/order/", {"version": version, "order": ["resource", "preset", "default"]}),
        ("layout", "layout/", {"version": version, "source": "preset-slots", "identity": "preserve",
                               "fallback": "source-order", "confirm": "yes"}),
        ("settings", "settings/", {"version": version, "name": "Renamed", "backend": "native",
                                   "placement": "native-slots", "confirm": "yes"}),
        ("revision save", "revisions/save/", {"version": version, "note": "n"}),
    ]


@pytest.mark.parametrize("index", range(11))
def test_every_write_for_every_role(users, editor, index):
    """Own strategy: anonymous -> login, qa -> 403, designer and admin -> 303 (no JavaScript) / 200 (htmx).
    Another user's strategy: designer 403. A built-in: 409 for everyone who may edit strategies."""
    strategy = editor["strategy"]
    label, path, data = _write_requests(strategy)[index]
    anonymous = client_for(None).post(_url(strategy, path), data)
    assert anonymous.status_code == 302 and "/accounts/login/" in anonymous["Location"], label
    refused = client_for(users["qa"]).post(_url(strategy, path), data)
    assert refused.status_code == 403, label
    assert _fresh(strategy).version == strategy.version

    others = editor["others"]
    _, other_path, other_data = _write_requests(others)[index]
    assert client_for(users["designer"]).post(_url(others, other_path), other_data).status_code == 403, label
    builtin = Strategy.objects.get(slug="builtin-native-slots")
    _, builtin_path, builtin_data = _write_requests(builtin)[index]
    assert client_for(users["designer"]).post(_url(builtin, builtin_path), builtin_data).status_code == 409, label
    assert _fresh(builtin).version == builtin.version and _fresh(others).version == others.version

    done = client_for(users["designer"]).post(_url(strategy, path), data)
    assert done.status_code == 303 and done["Location"].startswith(f"/strategies/{strategy.slug}/edit/"), label
    admin_data = {**data, "version": _fresh(strategy).version}
    if label == "revision save":
        admin_data["note"] = "again"
    htmx = client_for(users["admin"]).post(_url(strategy, path), admin_data, **HTMX)
    assert htmx.status_code == 200, (label, htmx.content[:400])
    assert b'id="workspace"' in htmx.content and b"<html" not in htmx.content


def test_copy_create_and_apply_need_their_permissions(users, editor):
    strategy = editor["strategy"]
    qa, designer = client_for(users["qa"]), client_for(users["designer"])
    assert qa.post("/strategies/builtin-st/copy/").status_code == 403
    assert qa.post("/strategies/new/", {"name": "Mine"}).status_code == 403
    assert qa.post(_url(strategy, "apply/"), {"sessions": [editor["session"].pk]}).status_code == 403
    assert Strategy.objects.filter(owner=users["qa"]).count() == 0
    assert Session.objects.get(pk=editor["session"].pk).applied_revision is None

    copied = designer.post("/strategies/builtin-st/copy/")
    copy = Strategy.objects.get(owner=users["designer"], slug="builtin-st-copy")
    assert copied.status_code == 303 and copied["Location"] == f"/strategies/{copy.slug}/edit/"
    assert copy.draft["rules"] == Strategy.objects.get(slug="builtin-st").draft["rules"] and not copy.builtin
    created = designer.post("/strategies/new/", {"name": "From scratch"})
    assert created.status_code == 303 and Strategy.objects.filter(name="From scratch", owner=users["designer"]).exists()


def test_an_admin_copies_and_applies_to_anyones_session_and_qa_is_refused_in_htmx_too(users, editor):
    strategy, session = editor["strategy"], editor["session"]
    admin = client_for(users["admin"])
    assert admin.post("/strategies/builtin-native-roles/copy/", {"name": "Admin roles"}).status_code == 303
    assert Strategy.objects.get(name="Admin roles").owner == users["admin"]
    applied = admin.post(_url(strategy, "apply/"), {"sessions": [session.pk]})  # the designer's session
    assert applied.status_code == 200 and b'data-applied="true"' in applied.content
    forged = client_for(users["qa"]).post(_url(strategy, "rules/order/"), {"version": strategy.version, "row": "phi",
                                                                          "direction": "up"}, **HTMX)
    assert forged.status_code == 403 and forged["HX-Retarget"] == "#editor-status"
    assert b'data-code="FORBIDDEN"' in forged.content and _fresh(strategy).version == strategy.version


def test_csrf_is_required_on_editor_writes(users, editor):
    strategy = editor["strategy"]
    client = csrf_client_for(users["designer"])
    response = client.post(_url(strategy, "rules/order/"), {"version": strategy.version, "row": "phi",
                                                            "direction": "up"})
    assert response.status_code == 403
    assert _fresh(strategy).version == strategy.version


def test_undo_puts_the_draft_back_and_the_next_offer_redoes_that_edit(users, editor):
    """The editor's undo is one step: after it the page offers to put the same edit back, and says which it did."""
    strategy = editor["strategy"]
    client = client_for(users["designer"])
    original = _fresh(strategy).draft
    client.post(_url(strategy, "rules/order/"), {"version": strategy.version, "row": "phi", "direction": "up"})
    moved = _fresh(strategy)
    assert moved.draft != original
    page = client.get(_url(strategy, "edit/")).content.decode()
    assert "Undo the last edit" in page and "Redo the undone edit" not in page
    undone = client.post(_url(strategy, "undo/"), {"version": moved.version}, follow=True).content.decode()
    assert _fresh(strategy).draft == original
    # the module is named as the editor lists it, not by its id
    assert "Undone: Module order saved (moved: Post-history instructions)." in undone
    assert "Redo the undone edit" in undone
    assert "Undo the last edit" not in undone
    redone = client.post(_url(strategy, "undo/"), {"version": _fresh(strategy).version}, follow=True).content.decode()
    assert _fresh(strategy).draft == moved.draft
    assert "Redone: Module order saved" in redone and "Undone: Undone" not in redone
    assert "Undo the last edit" in redone


# ---------------------------------------------------------------------------------------------- read-only views


def _workspace(html: str) -> str:
    return html.split('id="workspace"', 1)[1]


def test_qa_sees_the_editor_without_any_edit_control(users, editor):
    page = client_for(users["qa"]).get(f"/strategies/{editor['strategy'].slug}/edit/").content.decode()
    workspace = _workspace(page)
    assert 'method="post"' not in workspace and "data-sortable-url" not in workspace
    assert "drag-handle" not in workspace and "Save revision" not in workspace and 'data-move="up"' not in workspace
    assert 'data-editable="false"' in page and 'data-readonly="true"' in page
    assert 'data-row-id="preset"' in workspace  # the rules are still shown, in order


def test_a_builtin_is_read_only_with_copy_to_edit(users):
    page = client_for(users["designer"]).get("/strategies/builtin-native-slots/edit/").content.decode()
    workspace = _workspace(page)
    assert "data-sortable-url" not in workspace and 'data-move="up"' not in workspace
    assert 'action="/strategies/builtin-native-slots/copy/"' in workspace and "Copy to edit" in workspace


def test_another_users_strategy_is_read_only_for_a_designer(users, editor):
    page = client_for(users["designer"]).get(f"/strategies/{editor['others'].slug}/edit/").content.decode()
    assert "data-sortable-url" not in _workspace(page) and "belongs to another user" in page


def test_the_list_shows_builtins_backend_mode_latest_revision_and_sessions(users, editor):
    session_services.strategy_apply(session=editor["session"], strategy=editor["strategy"])
    page = client_for(users["qa"]).get("/strategies/").content.decode()
    own = page.split(f'data-strategy="{editor["strategy"].slug}"', 1)[1].split("</tr>", 1)[0]
    revision = editor["strategy"].revisions.first().revision
    assert "native-slots" in own and "native" in own and revision[:12] in own and "Locking session" in own
    builtin = page.split('data-strategy="builtin-st"', 1)[1].split("</tr>", 1)[0]
    assert 'class="badge builtin"' in builtin and "core" in builtin and 'data-placement="st">SillyTavern order<' in builtin
    assert 'data-builtin="true"' in page.split('data-strategy="builtin-st"', 1)[1][:40]


# ---------------------------------------------------------------------------------------------- locks in words


def _row(page: str, row_id: str) -> str:
    return page.split(f'data-row-id="{row_id}"', 1)[1].split("</li>", 1)[0]


def test_locked_rows_carry_their_reason_in_words(users, editor):
    page = client_for(users["designer"]).get(
        f"/strategies/{editor['strategy'].slug}/edit/?session={editor['session'].pk}").content.decode()
    description = _row(page, "character#description")
    assert 'data-locked="true"' in description and "drag-handle" not in description and "data-move" not in description
    assert "held by the preset marker “Char Description” (charDescription)" in description
    assert "data-lock-reason=" in description
    before = _row(page, "worldbook#before")
    assert 'data-locked="true"' in before and "“World Info (before)” (worldInfoBefore)" in before
    persona = _row(page, "persona#persona")  # pulled into the main prompt by a macro: held, not empty
    assert 'data-locked="true"' in persona and "referenced by {{persona}} in “Main Prompt”" in persona
    assert "empty" not in persona.split("data-lock-reason", 1)[0]
    greeting = _row(page, "character#greeting")
    assert 'data-locked="false"' in greeting and ">empty<" in greeting and "drag-handle" in greeting


def test_a_partly_held_row_shows_its_held_part_apart_and_its_free_part_moves(users, editor):
    """World info at depth 0 is pinned to the native depth boundary; at depth 3 it is free: one category, two rows."""
    from strategies_app.models import WorldBook

    strategy, session = editor["strategy"], editor["session"]
    book = services.worldbook_import(user=users["admin"], name="Depths", data={"entries": {
        "1": {"uid": 1, "key": ["x"], "comment": "Deep", "content": "Deep lore.", "constant": True, "position": 4,
              "depth": 0},
        "2": {"uid": 2, "key": ["x"], "comment": "Shallow", "content": "Shallow lore.", "constant": True,
              "position": 4, "depth": 3}}})
    session_services.session_update(session=session, world_books=[WorldBook.objects.get(pk=book.id)])
    page = client_for(users["designer"]).get(f"/strategies/{strategy.slug}/edit/?session={session.pk}").content.decode()
    held = _row(page, "worldbook#depth~held")
    assert 'data-locked="true"' in held and "pinned to the native depth boundary" in held and "Deep" in held
    assert "Shallow" not in held and "drag-handle" not in held
    free = _row(page, "worldbook#depth")
    assert 'data-locked="false"' in free and "drag-handle" in free and "Shallow" in free and "Deep" not in free
    assert page.index('data-row-id="worldbook#depth~held"') < page.index('data-row-id="worldbook#depth"')
    moved = client_for(users["designer"]).post(_url(strategy, "positions/order/"), {
        "version": strategy.version, "row": "worldbook#depth", "direction": "up", "session": session.pk})
    assert moved.status_code == 303


def test_the_preview_beside_the_editor_lists_the_request(users, editor):
    page = client_for(users["qa"]).get(
        f"/strategies/{editor['strategy'].slug}/edit/?session={editor['session'].pk}").content.decode()
    rows = re.findall(r'data-index="(\d+)" data-role="(\w+)" data-delivery="([\w-]+)" data-history-status="([\w-]+)"',
                      page)
    # native slots on a fresh session: the system head, then the typed input appended, then the post-history
    # prompt as a pre-step (a system prompt after the chat becomes user text in the standard backend).
    assert rows[0][1:] == ("system", "system", "appended")
    assert ("user", "input", "appended") in [row[1:] for row in rows]
    assert rows[-1][1:3] == ("user", "pre-step")
    assert 'data-code="NATIVE_ROLE_ADJUSTED"' in page


def test_the_preview_counts_each_message_in_the_page_s_language(users, editor):
    client = client_for(users["qa"])
    url = f"/strategies/{editor['strategy'].slug}/edit/?session={editor['session'].pk}"
    assert re.search(r'<span class="tokens">[\d,]+ tok</span>', client.get(url).content.decode())
    client.post("/i18n/setlang/", {"language": "zh-hans", "next": "/"})
    page = client.get(url).content.decode()
    assert re.search(r'<span class="tokens">[\d,]+ 个 token</span>', page) and " tok<" not in page


# ---------------------------------------------------------------------------------------------- refusals


def _unchanged(strategy, before):
    fresh = _fresh(strategy)
    assert (fresh.version, fresh.draft) == (before.version, before.draft)


@pytest.mark.parametrize("htmx", [False, True])
def test_a_stale_version_is_409_with_the_fresh_state_and_nothing_written(users, editor, htmx):
    strategy = editor["strategy"]
    client = client_for(users["designer"])
    seen = _fresh(strategy)
    client.post(_url(strategy, "rules/order/"), {"version": seen.version, "row": "phi", "direction": "up"})
    after_first = _fresh(strategy)
    for path, data in (("rules/order/", {"row": "preset", "direction": "down"}),
                       ("positions/order/", {"row": "preset#jailbreak", "direction": "up"}),
                       ("priority/order/", {"order": ["default", "preset", "resource"]}),
                       ("rules/phi/edit/", {"enabled": ["false"]}),
                       ("revisions/save/", {"note": "stale"})):
        response = _post(client, _url(strategy, path), {**data, "version": seen.version}, htmx=htmx)
        assert response.status_code == 409, path
        page = response.content.decode()
        assert 'data-code="STRATEGY_VERSION_CONFLICT"' in page and "Nothing was changed" in page
        assert f'data-version="{after_first.version}"' in page  # the fresh state, ready for the next edit
        _unchanged(strategy, after_first)
    assert StrategyRevision.objects.filter(strategy=strategy).count() == 1


def test_a_stale_text_edit_keeps_the_typed_text(users, editor):
    strategy = editor["strategy"]
    client = client_for(users["designer"])
    client.post(_url(strategy, "rules/add/"), {"version": strategy.version, "kind": "custom", "name": "Note",
                                               "text": "first"})
    seen = _fresh(strategy)
    client.post(_url(strategy, "rules/note/edit/"), {"version": seen.version, "text": "from the other tab"})
    stale = client.post(_url(strategy, "rules/note/edit/"), {"version": seen.version, "text": "my careful words"},
                        **HTMX)
    assert stale.status_code == 409
    assert "my careful words</textarea>" in stale.content.decode() and "kept" in stale.content.decode()
    assert next(r for r in _fresh(strategy).draft["rules"] if r["id"] == "note")["text"] == "from the other tab"


@pytest.mark.parametrize(("mutate", "expected"), [
    (lambda keys: keys[1:], "missing"),
    (lambda keys: [*keys, "worldbook#nowhere"], "unknown"),
    (lambda keys: [keys[0], *keys], "repeated"),
    (lambda keys: [*keys[:-1], "phi#elsewhere"], "unknown"),
])
def test_a_position_order_that_is_not_a_permutation_is_409(users, editor, mutate, expected):
    strategy = editor["strategy"]
    before = _fresh(strategy)
    response = client_for(users["designer"]).post(_url(strategy, "positions/order/"), {
        "version": before.version, "order": mutate(_position_keys(strategy)), "session": editor["session"].pk})
    assert response.status_code == 409
    page = response.content.decode()
    assert 'data-code="ORDER_NOT_PERMUTATION"' in page and expected in page
    _unchanged(strategy, before)


@pytest.mark.parametrize("path", ["rules/order/", "priority/order/"])
def test_rule_and_priority_orders_must_be_permutations_too(users, editor, path):
    strategy = editor["strategy"]
    before = _fresh(strategy)
    current = ([r["id"] for r in before.draft["rules"]] if path == "rules/order/"
               else ["preset", "resource", "default"])
    client = client_for(users["designer"])
    for order in (current[1:], [*current, "ghost"], [current[0], *current], ["user", *current]):
        response = client.post(_url(strategy, path), {"version": before.version, "order": order})
        assert response.status_code == 409 and b'data-code="ORDER_NOT_PERMUTATION"' in response.content, order
    _unchanged(strategy, before)


def test_moving_a_locked_row_is_refused_by_drag_and_by_button(users, editor):
    strategy, session = editor["strategy"], editor["session"]
    client = client_for(users["designer"])
    before = _fresh(strategy)
    keys = _position_keys(strategy)
    forged = ["character#description", *[k for k in keys if k != "character#description"]]  # past other locked rows
    response = client.post(_url(strategy, "positions/order/"), {"version": before.version, "order": forged,
                                                                "moved": "preset#main", "session": session.pk})
    assert response.status_code == 409
    page = response.content.decode()
    assert 'data-code="POSITION_LOCKED"' in page and "Char Description" in page
    _unchanged(strategy, before)
    placed = client.post(_url(strategy, "positions/"), {
        "version": _fresh(strategy).version, "key": "worldbook#before", "enabled": ["false", "true"],
        "placement": "list", "session": session.pk})
    assert placed.status_code == 409 and b'data-code="POSITION_LOCKED"' in placed.content


def test_a_locked_row_may_not_cross_another_locked_row_but_free_rows_pass_locked_ones(users, editor):
    strategy, session = editor["strategy"], editor["session"]
    client = client_for(users["designer"])
    keys = _position_keys(strategy)
    assert keys.index("persona#persona") + 1 == keys.index("character#description")  # both locked in this session
    before = _fresh(strategy)
    swapped = client.post(_url(strategy, "positions/order/"), {
        "version": before.version, "row": "persona#persona", "direction": "down", "session": session.pk})
    assert swapped.status_code == 409 and b'data-code="POSITION_LOCKED"' in swapped.content
    assert "“Persona description” (referenced by {{persona}} in “Main Prompt”)" in swapped.content.decode()
    _unchanged(strategy, before)
    free = client.post(_url(strategy, "positions/order/"), {
        "version": before.version, "row": "character#system", "direction": "up", "session": session.pk})
    assert free.status_code == 303
    stored = _fresh(strategy).draft["layout"]["positions"]
    moved = [row for row in stored if row["placement"] == "list"]
    assert [f"{row['sourceId']}#{row['positionId']}" for row in moved] == ["character#system"]


def test_unknown_rule_ids_are_409(users, editor):
    strategy = editor["strategy"]
    client = client_for(users["designer"])
    before = _fresh(strategy)
    for path, data in (("rules/ghost/edit/", {"enabled": ["false"]}), ("rules/ghost/remove/", {}),
                       ("rules/order/", {"row": "ghost", "direction": "up"}),
                       ("positions/order/", {"row": "worldbook#ghost", "direction": "up"}),
                       ("positions/", {"key": "worldbook#ghost", "enabled": ["true"], "placement": "source"})):
        response = client.post(_url(strategy, path), {**data, "version": before.version})
        assert response.status_code == 409, (path, response.status_code)
        assert re.search(rb'data-code="(RULE_NOT_FOUND|ORDER_NOT_PERMUTATION|POSITION_NOT_FOUND)"', response.content)
    assert client.post(_url(strategy, "rules/preset/remove/"), {"version": before.version}).status_code == 409
    _unchanged(strategy, before)


@pytest.mark.parametrize(("path", "data", "status"), [
    ("rules/phi/edit/", {"depth": "deep"}, 400),
    ("rules/phi/edit/", {"role": "narrator"}, 400),
    ("rules/phi/edit/", {"depth": "10001"}, 400),
    ("rules/order/", {"direction": "up"}, 400),
    ("layout/", {"source": "manual", "identity": "sideways", "fallback": "error"}, 400),
    ("settings/", {"name": "  ", "placement": "st"}, 400),
    ("rules/phi/edit/", {"text": "x" * 524_289}, 413),
])
def test_bad_values_are_refused_with_the_field_and_nothing_written(users, editor, path, data, status):
    strategy = editor["strategy"]
    before = _fresh(strategy)
    response = client_for(users["designer"]).post(_url(strategy, path), {**data, "version": before.version})
    assert response.status_code == status, response.status_code
    assert b'role="alert"' in response.content
    _unchanged(strategy, before)


def test_a_missing_version_is_400(users, editor):
    strategy = editor["strategy"]
    response = client_for(users["designer"]).post(_url(strategy, "rules/order/"), {"row": "phi", "direction": "up"})
    assert response.status_code == 400 and b"version" in response.content


# ---------------------------------------------------------------------------------------------- accepted edits


def test_a_dragged_resource_row_becomes_a_list_placement_and_every_row_is_stored_in_order(users, editor):
    strategy, session = editor["strategy"], editor["session"]
    keys = _position_keys(strategy)
    order = ["preset#jailbreak", *[k for k in keys if k != "preset#jailbreak"]]
    response = client_for(users["designer"]).post(_url(strategy, "positions/order/"), {
        "version": strategy.version, "order": order, "moved": "preset#jailbreak", "session": session.pk}, **HTMX)
    assert response.status_code == 200
    stored = _fresh(strategy).draft["layout"]["positions"]
    assert [f"{row['sourceId']}#{row['positionId']}" for row in stored] == order
    assert {f"{row['sourceId']}#{row['positionId']}" for row in stored if row["placement"] == "list"} == {
        "preset#jailbreak"}
    assert _position_keys(strategy) == order  # the list reads back as it was left
    page = response.content.decode()
    assert "placed by hand" in _row(page, "preset#jailbreak")


def test_a_position_move_adopts_a_layout_that_keeps_the_placement(users, editor):
    roles = services.strategy_copy(user=users["designer"], source=Strategy.objects.get(slug="builtin-native-roles"))
    assert "layout" not in roles.draft and roles.draft["placement"] == "native-roles"
    response = client_for(users["designer"]).post(_url(roles, "positions/order/"), {
        "version": roles.version, "row": "preset#jailbreak", "direction": "up"})
    assert response.status_code == 303
    draft = _fresh(roles).draft
    assert draft["placement"] == "native-roles" and draft["layout"]["source"] == "preset-slots"
    assert draft["layout"]["identity"] == "preserve" and draft["layout"]["priority"] == ["preset", "resource", "default"]


def test_reordering_rules_keeps_the_control_rows_in_place(users, editor):
    strategy = editor["strategy"]
    client = client_for(users["designer"])
    client.post(_url(strategy, "controls/"), {"version": strategy.version, "kind": "dsh.approval-policy",
                                              "enabled": ["false"]})
    draft = _fresh(strategy).draft
    kinds = [r["kind"] for r in draft["rules"]]
    assert kinds[-3:] == ["dsh.runtime-context", "dsh.sandbox-policy", "dsh.approval-policy"]
    assert [r["enabled"] for r in draft["rules"][-3:]] == [True, True, False]
    movable = [r["id"] for r in draft["rules"] if not r["kind"].startswith("dsh.")]
    response = client.post(_url(strategy, "rules/order/"), {"version": _fresh(strategy).version,
                                                            "order": list(reversed(movable))})
    assert response.status_code == 303
    after = _fresh(strategy).draft["rules"]
    assert [r["id"] for r in after[:len(movable)]] == list(reversed(movable))
    assert [r["kind"] for r in after[len(movable):]] == kinds[-3:]


def test_a_keyboard_move_steps_one_rule_and_the_edges_change_nothing(users, editor):
    strategy = editor["strategy"]
    client = client_for(users["designer"])
    ids = [r["id"] for r in strategy.draft["rules"]]
    client.post(_url(strategy, "rules/order/"), {"version": strategy.version, "row": "persona", "direction": "down"})
    expected = list(ids)
    i = expected.index("persona")
    expected[i], expected[i + 1] = expected[i + 1], expected[i]
    assert [r["id"] for r in _fresh(strategy).draft["rules"]] == expected
    top = client.post(_url(strategy, "rules/order/"), {"version": _fresh(strategy).version, "row": expected[0],
                                                       "direction": "up"})
    assert top.status_code == 303 and [r["id"] for r in _fresh(strategy).draft["rules"]] == expected


def test_rule_fields_custom_rules_priority_layout_and_settings(users, editor):
    strategy = editor["strategy"]
    client = client_for(users["designer"])

    def version():
        return _fresh(strategy).version

    client.post(_url(strategy, "rules/phi/edit/"), {"version": version(), "text": "Stay calm.", "depth": "",
                                                    "lifetime": "request", "role": "system", "delivery": "pre-step",
                                                    "name": "PHI"})
    phi = next(r for r in _fresh(strategy).draft["rules"] if r["id"] == "phi")
    assert (phi["text"], phi["role"], phi["delivery"], phi["name"], phi["depth"]) == (
        "Stay calm.", "system", "pre-step", "PHI", None)
    client.post(_url(strategy, "rules/phi/edit/"), {"version": version(), "enabled": ["false"]})
    phi = next(r for r in _fresh(strategy).draft["rules"] if r["id"] == "phi")
    assert phi["enabled"] is False and phi["text"] == "Stay calm."  # a switch changes the switch only

    client.post(_url(strategy, "rules/add/"), {"version": version(), "kind": "custom", "name": "Scene note",
                                               "text": "It is night.", "role": "system"})
    added = _fresh(strategy).draft["rules"][-1]
    assert (added["id"], added["kind"], added["text"], added["role"]) == ("scene-note", "custom", "It is night.",
                                                                          "system")
    client.post(_url(strategy, "rules/scene-note/remove/"), {"version": version()})
    assert "scene-note" not in [r["id"] for r in _fresh(strategy).draft["rules"]]

    client.post(_url(strategy, "priority/order/"), {"version": version(), "row": "default", "direction": "up"})
    assert _fresh(strategy).draft["layout"]["priority"] == ["preset", "default", "resource"]
    client.post(_url(strategy, "layout/"), {"version": version(), "source": "preset-slots", "identity": "preserve",
                                            "fallback": "error", "confirm": "yes"})
    draft = _fresh(strategy).draft
    assert draft["layout"]["fallback"] == "error" and draft["placement"] == "native-roles"  # identity decides
    client.post(_url(strategy, "settings/"), {"version": version(), "name": "Renamed copy", "backend": "native",
                                              "placement": "native-roles", "confirm": "yes"})
    assert _fresh(strategy).name == "Renamed copy"


def test_a_new_placement_is_refused_while_a_layout_policy_decides_it(users, editor):
    strategy = editor["strategy"]
    client = client_for(users["designer"])
    client.post(_url(strategy, "priority/order/"), {"version": strategy.version, "row": "default", "direction": "up"})
    with_layout = _fresh(strategy)
    assert with_layout.draft["layout"] and with_layout.draft["placement"] == "native-slots"
    client.get(f"/strategies/{strategy.slug}/edit/")  # the undo the page offers is the priority move's
    for data in ({"name": with_layout.name, "backend": "native", "placement": "modules"},
                 {"name": "Renamed copy", "backend": "native", "placement": "st", "confirm": "yes"}):
        response = client.post(_url(strategy, "settings/"), {"version": with_layout.version, **data}, **HTMX)
        page = response.content.decode()
        assert response.status_code == 409
        assert ("Placement was not changed: this strategy has a layout policy, and the layout policy decides the "
                "placement (now preset slots first). Nothing was changed.") in page
        assert "Strategy settings saved." not in page
        fresh = _fresh(strategy)
        assert (fresh.version, fresh.draft, fresh.name) == (with_layout.version, with_layout.draft, with_layout.name)
        assert client.session["editor-undo"][strategy.slug]["what"].startswith("Priority order saved")
    kept = client.post(_url(strategy, "settings/"), {"version": with_layout.version, "name": "Renamed copy",
                                                     "backend": "native", "placement": "native-slots"})
    assert kept.status_code == 303 and _fresh(strategy).name == "Renamed copy"


def test_the_placement_refusal_is_in_chinese_on_a_chinese_page(users, editor):
    strategy = editor["strategy"]
    services.layout_update(strategy=strategy, user=users["designer"], source="preset-slots", identity="position",
                           fallback="source-order", expected_version=strategy.version)
    client = client_for(users["designer"])
    client.cookies["django_language"] = "zh-hans"
    fresh = _fresh(strategy)
    response = client.post(_url(strategy, "settings/"), {"version": fresh.version, "name": fresh.name,
                                                         "backend": "native", "placement": "modules"}, **HTMX)
    assert response.status_code == 409 and _fresh(strategy).version == fresh.version
    assert "放置方式未更改" in response.content.decode()


def test_saving_revisions_and_the_diff_of_two(users, editor):
    strategy, session = editor["strategy"], editor["session"]
    client = client_for(users["designer"])
    first = strategy.revisions.first()
    unchanged = client.post(_url(strategy, "revisions/save/"), {"version": strategy.version, "note": "same"},
                            **HTMX)
    assert "unchanged" in unchanged.content.decode() and strategy.revisions.count() == 1
    client.post(_url(strategy, "positions/order/"), {"version": strategy.version, "row": "preset#jailbreak",
                                                     "direction": "up", "session": session.pk})
    saved = client.post(_url(strategy, "revisions/save/"), {"version": _fresh(strategy).version,
                                                            "note": "jailbreak first"})
    assert saved.status_code == 303
    second = strategy.revisions.first()
    assert second.note == "jailbreak first" and second.author == users["designer"] and second != first

    page = client_for(users["qa"]).get(f"/strategies/{strategy.slug}/revisions/?a={first.revision}"
                                       f"&b={second.revision}&session={session.pk}").content.decode()
    assert "jailbreak first" in page
    assert '<span class="added">+' in page and "&quot;placement&quot;: &quot;list&quot;" in page
    # the assembled outputs differ: the post-history prompt left the pre-step for the system head
    request_diff = page.split("Assembled requests on", 1)[1]
    assert '<span class="removed">-#' in request_diff and "pre-step" in request_diff
    assert client_for(users["qa"]).get(f"/strategies/{strategy.slug}/revisions/?a=ffffff&b=draft").status_code == 404


def test_apply_shows_each_sessions_outcome_inline(users, editor):
    strategy, session = editor["strategy"], editor["session"]
    core = services.strategy_copy(user=users["designer"], source=Strategy.objects.get(slug="builtin-st"))
    services.revision_save(strategy=core, user=users["designer"])
    client = client_for(users["designer"])
    applied = client.post(_url(strategy, "apply/"), {"sessions": [session.pk]}, **HTMX)
    assert applied.status_code == 200 and b'data-applied="true"' in applied.content
    session.refresh_from_db()
    assert session.applied_revision == strategy.revisions.first()

    refused = client.post(_url(core, "apply/"), {"sessions": [session.pk]}, **HTMX)
    assert refused.status_code == 409
    assert b'data-code="REQUEST_ASSEMBLY_CORE_REQUIRED"' in refused.content and b"previous selection" in refused.content
    session.refresh_from_db()
    assert session.applied_strategy == strategy  # the refused apply changed nothing
    page = client.post(_url(core, "apply/"), {"sessions": [session.pk]})  # without JavaScript: a whole page
    assert page.status_code == 409 and b"<html" in page.content
    other = session_services.session_create(user=users["admin"], name="Admin's session")
    assert client.post(_url(strategy, "apply/"), {"sessions": [other.pk]}).status_code == 400  # not offered


# ---------------------------------------------------------------------------------------------- content and language


def test_a_rule_added_without_text_says_it_sends_nothing_yet(users, editor):
    strategy = editor["strategy"]
    client = client_for(users["designer"])
    empty = client.post(_url(strategy, "rules/add/"), {"version": strategy.version, "kind": "custom", "name": "",
                                                       "text": "  "}, follow=True).content.decode()
    assert "added at the end of the module list. It has no text yet, so it sends nothing" in empty
    written = client.post(_url(strategy, "rules/add/"), {"version": _fresh(strategy).version, "kind": "custom",
                                                         "name": "Note", "text": "Hi"}, follow=True).content.decode()
    assert "added at the end of the module list." in written and "It has no text yet" not in written


def test_user_content_is_escaped_everywhere(users, editor):
    strategy, session = editor["strategy"], editor["session"]
    client = client_for(users["designer"])
    client.post(_url(strategy, "rules/add/"), {"version": strategy.version, "kind": "custom",
                                               "name": "<b>bold</b>", "text": "<script>alert('x')</script>",
                                               "role": "system"})
    client.post(_url(strategy, "settings/"), {"version": _fresh(strategy).version, "name": "<img src=x>",
                                              "backend": "native", "placement": "native-slots"})
    page = client.get(f"/strategies/{strategy.slug}/edit/?session={session.pk}").content.decode()
    assert "<script>alert" not in page and "<img src=x>" not in page and "<b>bold</b>" not in page
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page and "&lt;img src=x&gt;" in page
    listing = client.get("/strategies/").content.decode()
    assert "<img src=x>" not in listing and "&lt;img src=x&gt;" in listing


def test_the_editor_speaks_chinese(users, editor):
    client = client_for(users["designer"])
    client.post("/i18n/setlang/", {"language": "zh-hans", "next": "/strategies/"})
    page = client.get(f"/strategies/{editor['strategy'].slug}/edit/?session={editor['session'].pk}").content.decode()
    assert "角色描述" in page and "世界书（角色定义前）" in page  # category names in zh
    assert "资源位置" in page and "实时预览" in page  # the UI itself


def test_the_htmx_session_switch_answers_the_workspace_for_that_session(users, editor):
    strategy = editor["strategy"]
    other = session_services.session_create(user=users["designer"], name="Empty session", current_input="Hi")
    response = client_for(users["designer"]).get(f"/strategies/{strategy.slug}/edit/?session={other.pk}", **HTMX)
    assert response.status_code == 200 and b"<html" not in response.content
    assert f'data-session="{other.pk}"'.encode() in response.content


def test_a_strategy_the_session_cannot_run_shows_the_engine_refusal(users, editor):
    core = services.strategy_copy(user=users["designer"], source=Strategy.objects.get(slug="builtin-st"))
    page = client_for(users["designer"]).get(
        f"/strategies/{core.slug}/edit/?session={editor['session'].pk}").content.decode()
    assert 'data-code="REQUEST_ASSEMBLY_CORE_REQUIRED"' in page
    assert 'data-row-id="worldbook#before"' in page  # the rows are still there to edit


def test_no_sessions_at_all_still_shows_an_editable_page(users):
    Session.objects.all().delete()
    own = services.strategy_copy(user=users["designer"], source=Strategy.objects.get(slug="builtin-native-slots"))
    page = client_for(users["designer"]).get(f"/strategies/{own.slug}/edit/").content.decode()
    assert "No preview session" in page and "no sessions yet" in page and "data-sortable-url" in page


def test_query_counts_of_the_editor_do_not_grow_with_the_history(users, editor, django_assert_max_num_queries):
    session = editor["session"]
    url = f"/strategies/{editor['strategy'].slug}/edit/?session={session.pk}"
    client = client_for(users["designer"])
    client.get(url)
    for n in range(40):
        session_services.event_append(session=session, role="user" if n % 2 == 0 else "assistant", content=f"m{n}")
    with django_assert_max_num_queries(30):
        assert client.get(url).status_code == 200



def test_host_rules_offer_no_role_lifetime_or_depth(users, editor):
    """The host's own messages (native-system, history, input) cannot take a role, lifetime or depth (reference
    A.10.1; the engine refuses ASSEMBLY_RULE_UNSUPPORTED), so their rule forms do not offer them."""
    strategy = editor["strategy"]
    html = client_for(users["designer"]).get(f"/strategies/{strategy.slug}/edit/").content.decode()
    for host in ("history", "input", "native-system"):
        assert f'id="rule-{host}-role"' not in html and f'id="rule-{host}-depth"' not in html
        assert f'id="rule-{host}-name"' in html
    assert 'id="rule-preset-role"' in html and 'id="rule-preset-depth"' in html
    assert "The host's own messages keep their roles" in html


def test_a_request_only_message_says_so_once_in_the_live_preview(users, world):
    """The advanced backend's request-only messages: their delivery says "request only"; the history line then says
    only how it is sent, never "request only" a second time."""
    own = world["own"]
    own.refresh_from_db()
    services.draft_update(strategy=own, user=users["designer"], document={
        **own.draft, "backend": "core", "placement": "modules", "layout": {**own.draft["layout"], "source": "manual"}},
        expected_version=own.version)
    page = client_for(users["designer"]).get(f"/strategies/{own.slug}/edit/?session={world['session'].pk}")
    heads = re.findall(r'<li class="message[^"]*"[^>]*data-delivery="request"[^>]*>\s*<div class="message-head">(.*?)'
                       r"</div>", page.content.decode(), re.S)
    assert heads
    for head in heads:
        words = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", head))
        assert words.count("request only") == 1, words


@pytest.mark.parametrize("htmx", [False, True])
def test_a_saved_edit_the_engine_then_refuses_says_so_with_the_saved_notice(users, editor, htmx):
    """web.md, the edit's effect: a rule saved with a depth the standard backend's slots cannot take is saved (the
    document is valid), and what it did to this session's request is that the engine now refuses it."""
    strategy, session = editor["strategy"], editor["session"]
    client = client_for(users["designer"])
    response = _post(client, _url(strategy, "rules/preset/edit/"),
                     {"version": _fresh(strategy).version, "session": session.pk, "depth": "2"}, htmx=htmx)
    if not htmx:
        response = client.get(response["Location"])
    page = response.content.decode()
    assert next(r for r in _fresh(strategy).draft["rules"] if r["id"] == "preset")["depth"] == 2
    assert "Saved, but the engine now refuses this draft on this session (ASSEMBLY_NATIVE_UNSUPPORTED)" in page


@pytest.mark.parametrize(("data", "english", "chinese"), [
    ({"depth": "-3"}, "Depth of the rule “World book”: expected a whole number from 0 to 10000",
     "规则“世界书”的深度：应为 0 到 10000 之间的整数"),
    ({"depth": "99999999999"}, "Depth of the rule “World book”: expected a whole number from 0 to 10000",
     "规则“世界书”的深度：应为 0 到 10000 之间的整数"),
    ({"depth": "abc"}, "Depth of the rule “World book”: expected a whole number from 0 to 10000",
     "规则“世界书”的深度：应为 0 到 10000 之间的整数"),
    ({"name": "n" * 500}, "Name of the rule “World book”: expected at most 200 characters long",
     "规则“世界书”的名称：应为最多 200 个字符"),
])
def test_a_refused_rule_field_is_named_by_its_label_and_its_rule(users, editor, data, english, chinese):
    strategy = editor["strategy"]
    for language, words in (("en", english), ("zh-hans", chinese)):
        client = client_for(users["designer"])
        client.cookies["django_language"] = language
        response = client.post(_url(strategy, "rules/worldbook/edit/"), {"version": strategy.version, **data},
                               **HTMX)
        page = response.content.decode()
        assert response.status_code == 400 and _fresh(strategy).version == strategy.version
        assert words in page, language
        assert "depth:" not in page and "name：" not in page and "depth：" not in page


def test_a_blank_strategy_name_is_refused_by_its_label(users, editor):
    strategy = editor["strategy"]
    client = client_for(users["designer"])
    response = client.post(_url(strategy, "settings/"), {"version": strategy.version, "name": "",
                                                         "backend": "native", "placement": "native-slots"}, **HTMX)
    page = response.content.decode()
    assert response.status_code == 400 and _fresh(strategy).name == strategy.name
    assert "The change was refused: Name: This field is required. Nothing was changed." in page


def test_a_core_strategy_s_live_preview_refusal_on_a_chinese_page_is_chinese_after_a_full_width_colon(users, editor):
    page = client_for(users["designer"]).get(f"/strategies/builtin-st/edit/?session={editor['session'].pk}",
                                             HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    refusal = page.split('data-code="REQUEST_ASSEMBLY_CORE_REQUIRED"', 1)[1].split("</div>", 1)[0]
    assert "“宿主具备进阶（core）后端”" in refusal and "core available" not in refusal
    assert "(409)：此策略需要可选的进阶（core）组装扩展（<code>host.core_available</code>" in refusal
    assert 'lang="en"' not in refusal


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_each_live_preview_row_says_what_the_host_keeps_in_one_label_as_the_full_preview_does(users, world, language):
    from studio.wording import HISTORY_STATUS_WORDS

    page = client_for(users["designer"]).get(f"/strategies/{world['own'].slug}/edit/?session={world['session'].pk}",
                                             HTTP_ACCEPT_LANGUAGE=language).content.decode()
    rows = re.findall(r'<li class="message[^"]*"[^>]*data-delivery="([^"]+)" data-history-status="([^"]+)">'
                      r'(.*?)</li>', page, re.S)
    statuses = {status for _delivery, status, _row in rows}
    assert {"native", "appended"} <= statuses
    with translation.override(language):
        words = {status: str(word) for status, word in HISTORY_STATUS_WORDS.items()}
    for delivery, status, row in rows:
        labels = re.findall(r'<span class="history"[^>]*>(.*?)</span>', row, re.S)
        assert labels == ([] if (delivery, status) == ("request", "request-only") else [words[status]]), row
