"""Request blocks in the editor (reference A.11): a free block moves beside another one and the move is kept as a
layout override; a slot's block moves only when detached; the chat never moves; a move the engine would refuse
(a native role or delivery boundary) is refused before anything is saved; stored moves can be removed; every refusal
is 409 with the fresh state, and only the strategy's editors may move anything."""

import re

import pytest

from assembly import assemble
from preview_app.previews import session_request, strategy_document
from strategies_app import services
from strategies_app.models import Strategy
from tests.web.conftest import client_for
from tests.web.test_editor import HTMX, LOCKING_PRESET
from tests.web.test_editor import editor as native_editor  # noqa: F401  (the fixture)


@pytest.fixture
def editor(users):
    """The designer's and the admin's copies of builtin-st, and a session on a host with the core backend whose
    preset holds the card's description in a slot."""
    from preview_app import services as session_services
    from strategies_app.models import Character, Preset

    designer, admin = users["designer"], users["admin"]
    strategy = services.strategy_copy(user=designer, source=Strategy.objects.get(slug="builtin-st"), name="ST copy")
    others = services.strategy_copy(user=admin, source=Strategy.objects.get(slug="builtin-st"), name="Admin's ST")
    preset = services.preset_import(user=admin, data=LOCKING_PRESET, name="Locking preset")
    character = services.character_import(user=admin, data={"spec": "chara_card_v2", "spec_version": "2.0", "data": {
        "name": "Ada", "description": "An engineer who fixes lighthouses."}})
    session = session_services.session_create(
        user=designer, name="Core session", current_input="Hello there", host={"core_available": True},
        preset=Preset.objects.get(pk=preset.id), character=Character.objects.get(pk=character.id))
    return {"strategy": strategy, "others": others, "session": session}


def blocks_of(strategy, session):
    strategy = Strategy.objects.get(pk=strategy.pk)
    result = assemble(session_request(session, strategy_document(strategy, strategy.draft)))
    return result.layout.blocks, result


def block(blocks, module, group=None, binding=None):
    return next(b for b in blocks if b.key[1] == module and (group is None or b.key[2] == group)
                and (binding is None or b.binding == binding))


def move(client, strategy, session, target, anchor, side="before", detach=None, version=None, htmx=True):
    data = {"version": version if version is not None else Strategy.objects.get(pk=strategy.pk).version,
            "session": session.pk, "target": target, "anchor": anchor, "side": side}
    if detach is not None:
        data["detach"] = ["false", "true"] if detach else ["false"]
    return client.post(f"/strategies/{strategy.slug}/blocks/move/", data, **(HTMX if htmx else {}))


def request_order(result):
    return [n.module + ":" + (n.field or "") for n in sorted(
        (n for n in result.nodes if n.request_index is not None), key=lambda n: n.request_index)]


def test_a_free_block_moves_and_the_move_is_kept_as_an_override(users, editor):  # noqa: F811
    strategy, session = editor["strategy"], editor["session"]
    blocks, before = blocks_of(strategy, session)
    phi, main = block(blocks, "preset", "jailbreak"), block(blocks, "preset", "main")
    assert phi.movable and main.movable
    response = move(client_for(users["designer"]), strategy, session, phi.id, main.id, side="after")
    assert response.status_code == 200
    html = response.content.decode()
    assert "Block moved" in html and 'id="override-list"' in html
    draft = Strategy.objects.get(pk=strategy.pk).draft
    assert draft["layout"]["overrides"] == [{"target": phi.id, "anchor": main.id, "side": "after",
                                             "detach": False}]
    _, after = blocks_of(strategy, session)
    order = request_order(after)
    assert order.index("preset:jailbreak") == order.index("preset:main") + 1
    assert request_order(before).index("preset:jailbreak") > order.index("preset:jailbreak")


def test_a_slot_block_moves_only_when_detached(users, editor):  # noqa: F811
    strategy, session = editor["strategy"], editor["session"]
    blocks, _ = blocks_of(strategy, session)
    description, phi = block(blocks, "character", "description"), block(blocks, "preset", "jailbreak")
    assert description.binding == "slot" and description.overridable
    client = client_for(users["designer"])
    version = Strategy.objects.get(pk=strategy.pk).version
    refused = move(client, strategy, session, description.id, phi.id)
    assert refused.status_code == 409
    assert "This block follows its preset slot, or a place the chat fixes: tick “detach it from its slot”" in \
        refused.content.decode()
    assert Strategy.objects.get(pk=strategy.pk).version == version
    done = move(client, strategy, session, description.id, phi.id, detach=True)
    assert done.status_code == 200
    [override] = Strategy.objects.get(pk=strategy.pk).draft["layout"]["overrides"]
    assert override["detach"] is True and override["target"] == description.id


def test_the_chat_never_moves(users, editor):  # noqa: F811
    strategy, session = editor["strategy"], editor["session"]
    blocks, _ = blocks_of(strategy, session)
    chat, main = block(blocks, "input"), block(blocks, "preset", "main")
    before = Strategy.objects.get(pk=strategy.pk)
    refused = move(client_for(users["designer"]), strategy, session, chat.id, main.id)
    assert refused.status_code == 409 and "follows a slot or a runtime anchor" in refused.content.decode()
    after = Strategy.objects.get(pk=strategy.pk)
    assert (after.version, after.draft) == (before.version, before.draft)


def test_a_native_boundary_crossing_is_refused_before_saving(users, native_editor):  # noqa: F811
    strategy, session = native_editor["strategy"], native_editor["session"]
    blocks, _ = blocks_of(strategy, session)
    main, phi = block(blocks, "preset", "main"), block(blocks, "preset", "jailbreak")
    client = client_for(users["designer"])
    before = Strategy.objects.get(pk=strategy.pk)
    # native: the post-history prompt is a pre-step after the input; before the system prompt it crosses a boundary
    crossing = move(client, strategy, session, phi.id, main.id)
    assert crossing.status_code == 409
    assert "crosses a native role or delivery boundary" in crossing.content.decode()
    after = Strategy.objects.get(pk=strategy.pk)
    assert (after.version, after.draft) == (before.version, before.draft)


@pytest.mark.parametrize(("field", "value", "problem"), [
    ("side", "above", "side: Select a valid choice."),
    ("target", "block:nope", "Refresh current resources before moving this block"),
    ("anchor", "same", "anchor: expected another block than the one that moves"),
])
def test_bad_moves_name_the_problem_and_change_nothing(users, editor, field, value, problem):  # noqa: F811
    strategy, session = editor["strategy"], editor["session"]
    blocks, _ = blocks_of(strategy, session)
    phi, main = block(blocks, "preset", "jailbreak"), block(blocks, "preset", "main")
    data = {"target": phi.id, "anchor": main.id, "side": "after"}
    data[field] = phi.id if value == "same" else value
    before = Strategy.objects.get(pk=strategy.pk)
    response = move(client_for(users["designer"]), strategy, session, **data)
    assert response.status_code in (400, 409)
    assert problem in response.content.decode().replace("&#x27;", "'")
    assert Strategy.objects.get(pk=strategy.pk).version == before.version


def test_a_stale_move_is_a_conflict(users, editor):  # noqa: F811
    strategy, session = editor["strategy"], editor["session"]
    blocks, _ = blocks_of(strategy, session)
    phi, main = block(blocks, "preset", "jailbreak"), block(blocks, "preset", "main")
    stale = Strategy.objects.get(pk=strategy.pk).version - 1
    response = move(client_for(users["designer"]), strategy, session, phi.id, main.id, "after", version=stale)
    assert response.status_code == 409 and "Someone saved a newer version" in response.content.decode()


def test_a_stored_move_is_listed_and_can_be_removed(users, editor):  # noqa: F811
    strategy, session = editor["strategy"], editor["session"]
    blocks, _ = blocks_of(strategy, session)
    phi, main = block(blocks, "preset", "jailbreak"), block(blocks, "preset", "main")
    client = client_for(users["designer"])
    move(client, strategy, session, phi.id, main.id, "after")
    page = client.get(f"/strategies/{strategy.slug}/edit/?session={session.pk}").content.decode()
    listed = re.search(r'<ul class="overrides" id="override-list">(.*?)</ul>', page, re.S).group(1)
    assert re.search(r"#\d+ Post-History Instructions goes after #\d+ Main Prompt", listed)
    url = f"/strategies/{strategy.slug}/blocks/reset/"
    version = Strategy.objects.get(pk=strategy.pk).version
    removed = client.post(url, {"version": version, "session": session.pk, "target": phi.id})
    assert removed.status_code == 303
    assert Strategy.objects.get(pk=strategy.pk).draft["layout"]["overrides"] == []
    again = client.post(url, {"version": version + 1, "session": session.pk, "target": phi.id}, **HTMX)
    assert again.status_code == 409 and "That block has no stored move any more." in again.content.decode()


def test_only_the_strategys_editors_move_blocks(users, editor):  # noqa: F811
    strategy, others, session = editor["strategy"], editor["others"], editor["session"]
    blocks, _ = blocks_of(strategy, session)
    phi, main = block(blocks, "preset", "jailbreak"), block(blocks, "preset", "main")
    assert move(client_for(None), strategy, session, phi.id, main.id, "after", htmx=False).status_code == 302
    assert move(client_for(users["qa"]), strategy, session, phi.id, main.id, "after").status_code == 403
    assert move(client_for(users["designer"]), others, session, phi.id, main.id, "after").status_code == 403
    builtin = Strategy.objects.get(slug="builtin-native-slots")
    assert move(client_for(users["admin"]), builtin, session, phi.id, main.id, "after").status_code == 409
    assert Strategy.objects.get(pk=strategy.pk).draft.get("layout", {}).get("overrides", []) == []
    done = move(client_for(users["admin"]), strategy, session, phi.id, main.id, "after", htmx=False)
    assert done.status_code == 303
    qa_page = client_for(users["qa"]).get(f"/strategies/{strategy.slug}/edit/?session={session.pk}").content.decode()
    assert 'id="blocks-panel"' in qa_page and "/blocks/move/" not in qa_page and "/blocks/reset/" not in qa_page


def test_every_block_row_has_a_row_id_and_a_locked_one_says_why(users, editor):  # noqa: F811
    """web.md "Testable markup": a draggable row has data-row-id and data-locked; a locked one a visible reason."""
    strategy, session = editor["strategy"], editor["session"]
    page = client_for(users["designer"]).get(f"/strategies/{strategy.slug}/edit/?session={session.pk}").content.decode()
    blocks_html = page.split('id="block-list"', 1)[1].split("</ol>", 1)[0]
    rows = re.findall(r'<li class="row[^"]*" id="block-row-\d+" (.*?)</li>', blocks_html, re.S)
    assert rows
    bindings = set()
    for row in rows:
        assert re.match(r'data-row-id="[^"]+" data-block-id="[^"]+"', row)
        locked = re.search(r'data-locked="(true|false)"', row)[1] == "true"
        reason = re.search(r'data-lock-reason="(\w+)">([^<]+)<', row)
        binding = re.search(r'data-binding="(\w+)"', row)[1]
        bindings.add(binding)
        assert (reason is not None) == locked
        if locked:
            assert reason[1] == binding and reason[2].strip()
    assert {"slot", "runtime"} <= bindings


def test_a_refused_move_reads_in_chinese_on_a_chinese_page(users, editor):  # noqa: F811
    strategy, session = editor["strategy"], editor["session"]
    blocks, _ = blocks_of(strategy, session)
    description, phi = block(blocks, "character", "description"), block(blocks, "preset", "jailbreak")
    data = {"version": Strategy.objects.get(pk=strategy.pk).version, "session": session.pk,
            "target": description.id, "anchor": phi.id, "side": "before"}
    refused = client_for(users["designer"]).post(f"/strategies/{strategy.slug}/blocks/move/", data,
                                                  HTTP_ACCEPT_LANGUAGE="zh-hans", **HTMX)
    html = refused.content.decode()
    assert refused.status_code == 409 and "<strong>这个块跟随它的预设插槽" in html
    assert '<span lang="en">This block follows' in html  # the engine's own line, in the technical details only


def test_a_slot_block_names_the_preset_marker_that_holds_it(users, editor):  # noqa: F811
    strategy, session = editor["strategy"], editor["session"]
    page = client_for(users["designer"]).get(f"/strategies/{strategy.slug}/edit/?session={session.pk}").content.decode()
    blocks_html = page.split('id="block-list"', 1)[1].split("</ol>", 1)[0]
    reasons = re.findall(r'data-lock-reason="slot">([^<]+)<', blocks_html)
    assert reasons and all("held by the preset marker “" in r and r.endswith("; detach it to move it")
                           for r in reasons)


@pytest.mark.parametrize(("strategy", "moves"), [("builtin-native-roles", True), ("builtin-st", False)])
def test_the_blocks_hint_says_a_depth_item_moves_only_where_its_block_is_free(strategy, moves):
    """A world book entry at a depth is a runtime block where the depth is kept (SillyTavern's build) and a free
    block where the standard backend only approximates it (reference A.14.1); the panel's intro follows."""
    from bench.fixtures import assemble_request
    from strategies_app.presenters import block_context

    request = assemble_request(strategy, history=4, worldbook=6)
    request["host"]["native_available"] = True
    result = assemble(request)
    context = block_context({}, result, None)
    depth_blocks = [b for b in context["blocks"] if b["depth"] is not None]
    assert depth_blocks and {b["movable"] for b in depth_blocks} == {moves}
    assert context["depth_moves"] is moves
