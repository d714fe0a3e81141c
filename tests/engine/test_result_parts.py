"""What result building remembers across requests (layout run templates, framing role costs, log record ids) gives
the answer it would have worked out, and no result shares a mutable part with another."""

from dataclasses import asdict

from assembly import assemble
from assembly.blocks import Node
from assembly.host import LOG_KIND, _log_record_id, content_id
from assembly.layout import layout_blocks
from assembly.model_catalogue import FRAMINGS, Framing, framing_total
from assembly.results import DurableEvent, RequestMessage
from assembly.tokens import count_tokens


def node(node_id, **fields):
    values = {"rule_id": "preset", "module": "preset", "name": node_id, "role": "system", "original_role": "system",
              "text": node_id.upper(), "trust": "system"}
    return Node(id=node_id, **{**values, **fields})


def dumped(blocks):
    return [asdict(b) for b in blocks]


def test_a_free_a_slot_and_a_depth_node_make_free_slot_and_runtime_blocks():
    nodes = [node("a"), node("b", slot_id="s1"), node("c", depth=2)]
    fresh = dumped(layout_blocks(nodes, "core"))
    assert dumped(layout_blocks(nodes, "core")) == fresh
    assert [b["binding"] for b in fresh] == ["free", "slot", "runtime"]
    assert fresh[2]["limitations"] == ["RUNTIME_POSITION_FIXED"]


def test_blocks_of_two_requests_share_no_list():
    nodes = [node("a"), node("b", depth=1)]
    first, second = layout_blocks(nodes, "core"), layout_blocks(nodes, "core")
    for one, other in zip(first, second, strict=True):
        assert one.key is not other.key and one.limitations is not other.limitations
        assert one.node_ids is not other.node_ids
    first[1].key.append("changed")
    first[1].limitations.append("CHANGED")
    assert "CHANGED" not in layout_blocks(nodes, "core")[1].limitations
    assert layout_blocks(nodes, "core")[1].key == second[1].key


def test_a_blocks_reason_and_binding_follow_its_first_node():
    before = layout_blocks([node("a")], "core")[0]
    moved = layout_blocks([node("a", position_decision="user")], "core")[0]
    locked = layout_blocks([node("a", lock_reason="depth")], "core")[0]
    assert (before.reason, moved.reason, locked.reason) == ("source-order", "user-override", "depth")
    snapshot = layout_blocks([node("a", lifetime="snapshot")], "core")[0]
    assert (before.binding, snapshot.binding) == ("free", "runtime")


def test_the_same_request_twice_gives_equal_layouts_and_positions():
    request = {"strategy": "builtin-st", "conversation": {"input": [{"role": "user", "content": "hi"}]},
               "host": {"core_available": True}}
    first, second = assemble(request), assemble(request)
    assert first.layout.model_dump() == second.layout.model_dump()
    assert first.positions == second.positions
    assert first.layout.blocks[0].key is not second.layout.blocks[0].key


def test_framing_role_costs_are_the_framings_own():
    messages = [RequestMessage(id="1", role="system", content="a", tokens=1, delivery="context", region="request",
                               enters_history=False, history_status="request-only", parts=[]),
                RequestMessage(id="2", role="user", content="b", tokens=1, delivery="input", region="request",
                               enters_history=True, history_status="appended", parts=[], name="Ann")]
    openai = FRAMINGS["openai"]
    expected = (openai.reply + 3 + count_tokens("system", "o200k_base") + 3 + count_tokens("user", "o200k_base")
                + openai.per_name + count_tokens("Ann", "o200k_base"))
    assert framing_total(messages, "o200k_base", openai) == expected
    # another framing of the same name costs what its own table says
    other = Framing(name="openai", per_request=0, per_message={"system": 10, "user": 20}, role_tokens=False,
                    per_name=0, name_tokens=False, reply=0)
    assert framing_total(messages, "o200k_base", other) == 30


def test_the_log_record_id_is_the_content_id_of_the_revision_and_messages():
    ids = ("m1", "m2")
    assert _log_record_id("rev", ids) == content_id(LOG_KIND, "rev", "m1", "m2")
    assert _log_record_id("rev", ids) == _log_record_id("rev", ("m1", "m2"))
    assert _log_record_id("rev", ids) != _log_record_id("rev", ("m1", "m3"))


def test_a_record_in_field_order_is_its_own_and_dumps_in_that_order():
    values = {"id": "e1", "role": "system", "content": "", "source": {"kind": LOG_KIND}}
    event, other = DurableEvent.of(values), DurableEvent.of(dict(values))
    values["id"] = "changed"
    assert event.id == "e1" and list(event.model_dump()) == ["id", "role", "content", "source"]
    assert event.model_fields_set == {"id", "role", "content", "source"}
    assert event == other and event.__pydantic_private__ is not other.__pydantic_private__
    assert event.__pydantic_extra__ is not other.__pydantic_extra__
    # a record in another order keeps its own
    mixed = DurableEvent.of({"role": "user", "id": "i1", "content": "hi"})
    assert list(mixed.model_dump()) == ["role", "id", "content"]


def test_a_row_of_one_node_reports_that_node_as_a_longer_row_would():
    from bench.fixtures import assemble_request

    request = assemble_request("builtin-st", history=4, worldbook=3)
    result = assemble(request)
    views = {v.id: v for v in result.nodes}
    single = [row for row in result.positions if len(row.node_ids) == 1]
    assert single
    for row in single:
        view = views[row.node_ids[0]]
        assert (row.empty, row.split, row.partly_locked) == (False, False, False)
        assert row.locked == view.locked and row.decisions == [view.position_decision]
        assert row.lock_reasons == ([view.lock_reason] if view.locked and view.lock_reason else [])
        assert row.held_by == ([view.slot_id] if view.locked and view.slot_id else [])
    again = assemble(request)
    assert again.positions == result.positions
    assert again.positions[0].node_ids is not result.positions[0].node_ids


def test_a_key_of_two_runs_names_each_run_by_its_first_node():
    nodes = [node("a", field="f"), node("b", field="g"), node("c", field="f"), node("d", field="f")]
    ids = [b.id for b in layout_blocks(nodes, "core")]
    assert ids[0].endswith(":run:a") and ids[2].endswith(":run:c") and ids[0] != ids[2]
    assert ":run:" not in ids[1]
    assert [b.id for b in layout_blocks(nodes, "core")] == ids


def test_a_core_series_starts_when_the_last_logged_revision_differs():
    from assembly.host import starts_request_series

    def starts(history):
        return starts_request_series(backend="core", history=history, revision="r2", system_text="", adaptive=False,
                                     native_system_enabled=True)

    logged = [{"id": "l1", "role": "system", "content": "", "source": {"kind": LOG_KIND, "revision": "r1"}},
              {"id": "u1", "role": "user", "content": "hi"}]
    assert starts(logged) is True
    assert starts([*logged, {"id": "l2", "role": "system", "source": {"kind": LOG_KIND, "revision": "r2"}}]) is False
    assert starts([{"id": "u1", "role": "user", "content": "hi", "source": None}]) is False


def test_a_block_id_writes_its_key_as_the_json_encoder_does():
    import json

    from assembly.layout import _key_text

    encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
    for key in [("preset", "preset", "main", None, None, "system", "request"),
                ("history", "history", 'a "quoted"\\ \n\t\x01 group', "slot", 4, None, "request"),
                ("worldbook", "worldbook", "前 é ☃ \u2028", None, -3, "user", "after-input:context"),
                ("r", "m", True, 1.5, False, None, "request")]:
        assert _key_text(key) == encode(list(key))


def test_a_row_reports_its_nodes_whether_one_or_several():
    from assembly.positions import _row_locks

    one = _row_locks([node("a", locked=True, lock_reason="depth", slot_id="s1", position_decision="preset")])
    several = _row_locks([node("a", locked=True, lock_reason="depth", slot_id="s1", position_decision="preset"),
                          node("b", locked=True, lock_reason="depth", slot_id="s1", position_decision="preset")])
    # locked, partly locked, lock reasons, held by, decisions
    assert one == several == (True, False, ["depth"], ["s1"], ["preset"])
    assert _row_locks([node("a", lock_reason="depth", slot_id="s1")])[:4] == (False, False, [], [])
    mixed = _row_locks([node("a", locked=True, lock_reason="slot", slot_id="s2", position_decision="preset"),
                        node("b", lock_reason="depth", slot_id="s3", position_decision="source"),
                        node("c", locked=True, lock_reason="depth", slot_id="s1", position_decision="preset")])
    assert mixed == (False, True, ["depth", "slot"], ["s1", "s2"], ["preset", "source"])
    partly = _row_locks([node("a", locked=True, lock_reason="depth", slot_id="s1", position_decision="preset"),
                         node("b", position_decision="source")])
    assert partly == (False, True, ["depth"], ["s1"], ["preset", "source"])
