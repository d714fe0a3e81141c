"""The placement primitive (engine.md §2, seed 000): positions, depth, ties, embedding, hooks, errors, capabilities.

Expected message lists are worked out by hand from the spec's table and ordering rule.
"""

import copy

import pytest
from pydantic import BaseModel

from assembly.placement import (
    ContextBlock,
    PlacementError,
    PlacementResult,
    get_placement_capabilities,
    place_context_blocks,
)


def msg(role, content):
    return {"role": role, "content": content}


def contents(result):
    return [m["content"] for m in result.messages]


def block(block_id, position, content=None, **extra):
    return {"id": block_id, "position": position, "content": content if content is not None else block_id, **extra}


# --- the seed's example ----------------------------------------------------------------------------------------------


def test_seed_gate_rule_lands_between_character_setting_and_user_input():
    messages = [msg("system", "你扮演城门守卫。"), msg("user", "我递出铜钥匙。")]
    result = place_context_blocks(
        messages,
        {"character": {"start": 0, "end": 1}},
        [{"id": "gate-rule", "position": "after_character", "order": 0, "role": "system",
          "content": "进入禁区需要手令；铜钥匙不能替代手令。"}],
        create_message=lambda message: message,
    )
    assert result.messages == [
        msg("system", "你扮演城门守卫。"),
        msg("system", "进入禁区需要手令；铜钥匙不能替代手令。"),
        msg("user", "我递出铜钥匙。"),
    ]
    dumped = result.model_dump(mode="json")
    assert dumped["placements"] == [{
        "id": "gate-rule", "position": "after_character", "message_index": 1, "embedded": False, "role": "system",
        "insertion_point": 1, "requested_depth": None, "effective_depth": None, "order": 0,
    }]


# --- one block per position on a full layout ------------------------------------------------------------------------

# 0 MAIN | 1 CHAR (character) | 2-3 EX1 EX2 (examples) | 4 U1, 5 A1 (history) | 6 NOTE (author note) | 7 U2 (history)
# | 8 the outlet host.
FULL_MESSAGES = [
    msg("system", "MAIN"),
    msg("system", "CHAR"),
    msg("system", "EX1"),
    msg("system", "EX2"),
    msg("user", "U1"),
    msg("assistant", "A1"),
    msg("system", "NOTE"),
    msg("user", "U2"),
    msg("user", "TAIL {{outlet::tail}} END"),
]
FULL_LAYOUT = {
    "character": {"start": 1, "end": 2},
    "examples": {"start": 2, "end": 4},
    "conversation": {"message_indices": [4, 5, 7], "empty_index": 4},
    "author_note": 6,
    "outlets": {"tail": 8},
}
ORIGINAL = ["MAIN", "CHAR", "EX1", "EX2", "U1", "A1", "NOTE", "U2", "TAIL  END"]  # declared outlet, no block -> ""


def inserted(at, text="X"):
    return ORIGINAL[:at] + [text] + ORIGINAL[at:]


def replaced(at, text):
    return ORIGINAL[:at] + [text] + ORIGINAL[at + 1:]


# (block extras, expected contents, message_index, insertion_point, embedded, role, requested, effective)
POSITION_CASES = {
    "before_character": ({"position": "before_character"}, inserted(1), 1, 1, False, "system", None, None),
    "after_character": ({"position": "after_character"}, inserted(2), 2, 2, False, "system", None, None),
    "before_examples": ({"position": "before_examples"}, inserted(2), 2, 2, False, "system", None, None),
    "after_examples": ({"position": "after_examples"}, inserted(4), 4, 4, False, "system", None, None),
    "at_depth 0": ({"position": "at_depth", "depth": 0}, inserted(8), 8, 8, False, "system", 0, 0),
    "at_depth 1": ({"position": "at_depth", "depth": 1}, inserted(7), 7, 7, False, "system", 1, 1),
    "at_depth 2": ({"position": "at_depth", "depth": 2}, inserted(5), 5, 5, False, "system", 2, 2),
    "at_depth n": ({"position": "at_depth", "depth": 3}, inserted(4), 4, 4, False, "system", 3, 3),
    "at_depth > n": ({"position": "at_depth", "depth": 9}, inserted(4), 4, 4, False, "system", 9, 3),
    "author_note_top": ({"position": "author_note_top"}, replaced(6, "X\nNOTE"), 6, None, True, "system", None, None),
    "author_note_bottom": ({"position": "author_note_bottom"}, replaced(6, "NOTE\nX"), 6, None, True, "system", None,
                           None),
    "outlet": ({"position": "outlet", "outlet_name": "tail"}, replaced(8, "TAIL X END"), 8, None, True, "user", None,
               None),
    "standalone user role": ({"position": "after_examples", "role": "user"}, inserted(4), 4, 4, False, "user", None,
                             None),
}


@pytest.mark.parametrize("case", POSITION_CASES.values(), ids=POSITION_CASES.keys())
def test_each_position_on_a_full_layout(case):
    extra, expected, message_index, point, embedded, role, requested, effective = case
    result = place_context_blocks(FULL_MESSAGES, FULL_LAYOUT, [{"id": "X", "content": "X", "order": 0, **extra}])
    assert contents(result) == expected
    assert result.messages[message_index]["role"] == role
    record = result.placements[0].model_dump()
    assert record == {
        "id": "X", "position": extra["position"], "message_index": message_index, "embedded": embedded,
        "role": role, "insertion_point": point, "requested_depth": requested, "effective_depth": effective, "order": 0,
    }


def test_all_positions_at_once_keep_every_original_message_in_order():
    blocks = [
        block("bc", "before_character"), block("ac", "after_character"), block("be", "before_examples"),
        block("ae", "after_examples"), block("d0", "at_depth", depth=0), block("d2", "at_depth", depth=2),
        block("top", "author_note_top"), block("bottom", "author_note_bottom"),
        block("out", "outlet", outlet_name="tail"),
    ]
    result = place_context_blocks(FULL_MESSAGES, FULL_LAYOUT, blocks)
    assert contents(result) == [
        "MAIN", "bc", "CHAR", "ac", "be", "EX1", "EX2", "ae", "U1", "d2", "A1", "top\nNOTE\nbottom", "U2", "d0",
        "TAIL out END",
    ]
    # Records follow the result: message by message, embedded blocks in reading order.
    assert [(r.id, r.message_index) for r in result.placements] == [
        ("bc", 1), ("ac", 3), ("be", 4), ("ae", 7), ("d2", 9), ("top", 11), ("bottom", 11), ("d0", 13), ("out", 14),
    ]


# --- depth -----------------------------------------------------------------------------------------------------------

# 0 SYS | 1 H1 | 2 H2 | 3 H3 | 4 INPUT (not history)
DEPTH_MESSAGES = [msg("system", "SYS"), msg("user", "H1"), msg("assistant", "H2"), msg("user", "H3"),
                  msg("user", "INPUT")]
DEPTH_CASES = [
    # (history, empty_index, depth, expected contents, effective depth)
    ([1, 2, 3], 1, 0, ["SYS", "H1", "H2", "H3", "D", "INPUT"], 0),
    ([1, 2, 3], 1, 1, ["SYS", "H1", "H2", "D", "H3", "INPUT"], 1),
    ([1, 2, 3], 1, 3, ["SYS", "D", "H1", "H2", "H3", "INPUT"], 3),
    ([1, 2, 3], 1, 50, ["SYS", "D", "H1", "H2", "H3", "INPUT"], 3),
    ([], 1, 0, ["SYS", "D", "H1", "H2", "H3", "INPUT"], 0),
    ([], 4, 7, ["SYS", "H1", "H2", "H3", "D", "INPUT"], 0),
    ([], 5, 2, ["SYS", "H1", "H2", "H3", "INPUT", "D"], 0),
    ([2], 0, 1, ["SYS", "H1", "D", "H2", "H3", "INPUT"], 1),  # only H2 is history; H1 is not counted
    ([1, 3], 0, 1, ["SYS", "H1", "H2", "D", "H3", "INPUT"], 1),  # H2 between history messages is skipped over
    ([1, 3], 0, 2, ["SYS", "D", "H1", "H2", "H3", "INPUT"], 2),
]


@pytest.mark.parametrize(("history", "empty_index", "depth", "expected", "effective"), DEPTH_CASES)
def test_depth_counts_real_history_messages_from_the_end(history, empty_index, depth, expected, effective):
    layout = {"conversation": {"message_indices": history, "empty_index": empty_index}}
    result = place_context_blocks(DEPTH_MESSAGES, layout, [block("D", "at_depth", depth=depth)])
    assert contents(result) == expected
    assert result.placements[0].requested_depth == depth
    assert result.placements[0].effective_depth == effective
    assert result.placements[0].message_index == expected.index("D")


def test_depth_blocks_at_one_point_go_deeper_first_then_order_then_id():
    layout = {"conversation": {"message_indices": [1], "empty_index": 0}}
    blocks = [block("b", "at_depth", depth=1, order=0), block("far", "at_depth", depth=5, order=9),
              block("a", "at_depth", depth=1, order=0), block("first", "at_depth", depth=1, order=-1)]
    result = place_context_blocks([msg("system", "S"), msg("user", "H")], layout, blocks)
    # depth 5 > n = 1 lands at the same point as depth 1, and comes first because it asked to be deeper.
    assert contents(result) == ["S", "far", "first", "a", "b", "H"]
    assert [r.effective_depth for r in result.placements] == [1, 1, 1, 1]


# --- ties at shared insertion points ---------------------------------------------------------------------------------


def test_character_end_equals_examples_start_with_depth_at_the_same_point():
    messages = [msg("system", "CHAR"), msg("system", "EX"), msg("user", "NOW")]
    layout = {"character": {"start": 0, "end": 1}, "examples": {"start": 1, "end": 2},
              "conversation": {"message_indices": [], "empty_index": 1}}
    blocks = [
        block("be", "before_examples", order=-100),  # a smaller order does not cross the region boundary
        block("d-shallow", "at_depth", depth=0, order=-50),
        block("ac-2", "after_character", order=100),
        block("d-deep", "at_depth", depth=4, order=50),
        block("ac-1b", "after_character", order=7),
        block("ac-1a", "after_character", order=7),
    ]
    result = place_context_blocks(messages, layout, blocks)
    assert contents(result) == ["CHAR", "ac-1a", "ac-1b", "ac-2", "d-deep", "d-shallow", "be", "EX", "NOW"]
    assert {r.insertion_point for r in result.placements} == {1}


def test_examples_before_character_closes_examples_first():
    messages = [msg("system", "EX"), msg("system", "CHAR")]
    layout = {"examples": {"start": 0, "end": 1}, "character": {"start": 1, "end": 2},
              "conversation": {"message_indices": [], "empty_index": 1}}
    blocks = [block("bc", "before_character"), block("d", "at_depth", depth=0), block("ae", "after_examples")]
    result = place_context_blocks(messages, layout, blocks)
    assert contents(result) == ["EX", "ae", "d", "bc", "CHAR"]


def test_an_empty_region_keeps_its_before_blocks_before_its_after_blocks():
    # Character [0, 1), no example messages (examples [1, 1)), history starts at 1.
    messages = [msg("system", "CHAR"), msg("user", "H1")]
    layout = {"character": {"start": 0, "end": 1}, "examples": {"start": 1, "end": 1},
              "conversation": {"message_indices": [1], "empty_index": 1}}
    blocks = [block("d", "at_depth", depth=3), block("ae", "after_examples", order=-5), block("be", "before_examples"),
              block("ac", "after_character", order=99)]
    result = place_context_blocks(messages, layout, blocks)
    # The depth block belongs to the history message that follows, so it sits closest to it.
    assert contents(result) == ["CHAR", "ac", "be", "ae", "d", "H1"]


def test_depth_zero_hugs_the_last_history_message_before_an_empty_region():
    messages = [msg("user", "H1"), msg("system", "POST")]
    layout = {"examples": {"start": 1, "end": 1}, "conversation": {"message_indices": [0], "empty_index": 0}}
    blocks = [block("be", "before_examples"), block("d0", "at_depth", depth=0), block("ae", "after_examples")]
    result = place_context_blocks(messages, layout, blocks)
    assert contents(result) == ["H1", "d0", "be", "ae", "POST"]


def test_two_empty_regions_at_one_point_follow_character_then_examples():
    messages = [msg("user", "H1")]
    layout = {"character": {"start": 0, "end": 0}, "examples": {"start": 0, "end": 0},
              "conversation": {"message_indices": [], "empty_index": 0}}
    blocks = [block("ae", "after_examples"), block("be", "before_examples"), block("ac", "after_character"),
              block("bc", "before_character"), block("d", "at_depth", depth=0)]
    result = place_context_blocks(messages, layout, blocks)
    assert contents(result) == ["bc", "ac", "be", "ae", "d", "H1"]


def test_within_one_position_order_then_id_regardless_of_input_order():
    blocks = [block("b", "before_character", order=1), block("c", "before_character", order=0),
              block("a", "before_character", order=1), block("z", "before_character", order=-3)]
    layout = {"character": {"start": 0, "end": 1}}
    forward = place_context_blocks([msg("system", "CHAR")], layout, blocks)
    backward = place_context_blocks([msg("system", "CHAR")], layout, list(reversed(blocks)))
    assert contents(forward) == ["z", "c", "a", "b", "CHAR"]
    assert forward.model_dump() == backward.model_dump()


# --- embedded blocks -------------------------------------------------------------------------------------------------


def test_author_note_blocks_join_with_newlines_and_inherit_the_host_role():
    messages = [msg("user", "Q"), msg("assistant", "[Note: stay calm]")]
    blocks = [block("b2", "author_note_bottom", order=2), block("t", "author_note_top", order=5),
              block("b1", "author_note_bottom", order=1), block("t0", "author_note_top", order=5, role="assistant")]
    result = place_context_blocks(messages, {"author_note": 1}, blocks)
    assert result.messages[1] == msg("assistant", "t\nt0\n[Note: stay calm]\nb1\nb2")
    assert [(r.id, r.role, r.embedded, r.message_index) for r in result.placements] == [
        ("t", "assistant", True, 1), ("t0", "assistant", True, 1), ("b1", "assistant", True, 1),
        ("b2", "assistant", True, 1),
    ]


def test_outlet_blocks_replace_the_marker_and_undeclared_markers_stay():
    messages = [msg("system", "A {{outlet::lore}} B {{outlet::other}} C {{outlet::empty}}")]
    layout = {"outlets": {"lore": 0, "other": 0, "empty": 0}}
    blocks = [block("l2", "outlet", outlet_name="lore", order=1), block("o", "outlet", outlet_name="other"),
              block("l1", "outlet", outlet_name="lore", order=0)]
    result = place_context_blocks(messages, layout, blocks)
    assert contents(result) == ["A l1\nl2 B o C "]
    assert [r.id for r in result.placements] == ["l1", "l2", "o"]


def test_inserted_outlet_text_is_not_scanned_for_other_markers():
    # Replacing `a` with "{{" must not turn the rest into a marker for `b`.
    messages = [msg("system", "{{outlet::a}}outlet::b}} and {{outlet::b}}")]
    result = place_context_blocks(messages, {"outlets": {"a": 0, "b": 0}},
                                  [block("x", "outlet", "{{", outlet_name="a"), block("y", "outlet", outlet_name="b")])
    assert contents(result) == ["{{outlet::b}} and y"]


def test_author_note_that_also_hosts_an_outlet():
    messages = [msg("system", "note {{outlet::n}}")]
    blocks = [block("top", "author_note_top"), block("in", "outlet", outlet_name="n")]
    result = place_context_blocks(messages, {"author_note": 0, "outlets": {"n": 0}}, blocks)
    assert contents(result) == ["top\nnote in"]
    assert [r.id for r in result.placements] == ["top", "in"]


def test_embedded_host_is_a_copy_with_its_other_fields_kept():
    host = {"role": "system", "content": "NOTE", "name": "author", "meta": {"k": 1}}
    messages = [host, msg("user", "Q")]
    result = place_context_blocks(messages, {"author_note": 0}, [block("t", "author_note_top")])
    assert result.messages[0] == {"role": "system", "content": "t\nNOTE", "name": "author", "meta": {"k": 1}}
    assert result.messages[0] is not host
    assert host == {"role": "system", "content": "NOTE", "name": "author", "meta": {"k": 1}}
    assert result.messages[1] is messages[1]


def test_pydantic_host_messages_are_copied_not_changed():
    class Message(BaseModel):
        role: str
        content: str

    messages = [Message(role="system", content="NOTE")]
    result = place_context_blocks(messages, {"author_note": 0}, [block("t", "author_note_bottom")])
    assert result.messages[0] == Message(role="system", content="NOTE\nt")
    assert messages[0].content == "NOTE"


# --- hooks -----------------------------------------------------------------------------------------------------------


def test_render_block_formats_standalone_and_embedded_blocks():
    seen = []

    def render(b):
        assert isinstance(b, ContextBlock)
        seen.append((b.id, b.role, b.content, b.model_extra.get("title")))
        return f"[{b.model_extra['title']}] {b.content['text']}"

    messages = [msg("system", "CHAR"), msg("system", "NOTE")]
    blocks = [
        {"id": "a", "position": "after_character", "title": "Gate", "content": {"text": "needs a pass"}},
        {"id": "b", "position": "author_note_top", "title": "Mood", "content": {"text": "tense"}},
    ]
    result = place_context_blocks(messages, {"character": {"start": 0, "end": 1}, "author_note": 1}, blocks,
                                  render_block=render)
    assert contents(result) == ["CHAR", "[Gate] needs a pass", "[Mood] tense\nNOTE"]
    assert seen == [("a", "system", {"text": "needs a pass"}, "Gate"), ("b", "system", {"text": "tense"}, "Mood")]


def test_render_messages_receives_each_insertion_point_once_in_final_order():
    calls = []

    def merge(blocks):
        calls.append([(b.id, b.content) for b in blocks])
        return [{"role": "system", "content": " | ".join(b.content for b in blocks), "merged": True}]

    messages = [msg("system", "CHAR"), msg("user", "H1"), msg("system", "NOTE")]
    layout = {"character": {"start": 0, "end": 1}, "conversation": {"message_indices": [1], "empty_index": 1},
              "author_note": 2}
    blocks = [block("z", "after_character", "Z"), block("y", "after_character", "Y", order=-1),
              block("d", "at_depth", "D", depth=0), block("n", "author_note_bottom", "N")]
    result = place_context_blocks(messages, layout, blocks, render_messages=merge)
    assert calls == [[("y", "Y"), ("z", "Z")], [("d", "D")]]  # the author-note block is embedded, not rendered
    assert contents(result) == ["CHAR", "Y | Z", "H1", "D", "NOTE\nN"]
    # Several blocks merged into one message all point at it.
    assert [(r.id, r.message_index) for r in result.placements] == [("y", 1), ("z", 1), ("d", 3), ("n", 4)]


def test_render_messages_with_one_message_per_block_maps_one_to_one():
    def tagged(blocks):
        return [{"role": b.role, "content": f"<{b.content}>"} for b in blocks]

    result = place_context_blocks([msg("system", "CHAR")], {"character": {"start": 0, "end": 1}},
                                  [block("b", "before_character"), block("a", "before_character")],
                                  render_messages=tagged)
    assert contents(result) == ["<a>", "<b>", "CHAR"]
    assert [(r.id, r.message_index) for r in result.placements] == [("a", 0), ("b", 1)]


def test_create_message_builds_standalone_messages_only():
    class HostMessage:
        def __init__(self, data):
            self.data = data

    result = place_context_blocks(
        [msg("system", "CHAR"), msg("system", "NOTE")], {"character": {"start": 0, "end": 1}, "author_note": 1},
        [block("a", "after_character", role="user"), block("t", "author_note_top")], create_message=HostMessage)
    assert isinstance(result.messages[1], HostMessage)
    assert result.messages[1].data == {"role": "user", "content": "a"}
    assert result.messages[0] == msg("system", "CHAR")
    assert result.messages[2] == msg("system", "t\nNOTE")


def test_no_hook_runs_to_build_messages_when_a_later_block_fails():
    created = []
    with pytest.raises(PlacementError) as error:
        place_context_blocks([msg("system", "CHAR")], {"character": {"start": 0, "end": 1}},
                             [block("ok", "after_character"), block("bad", "at_depth", depth=0)],
                             create_message=created.append)
    assert error.value.code == "ANCHOR_MISSING"
    assert created == []


# --- input spellings and result shape ---------------------------------------------------------------------------------


def test_camel_case_layout_and_blocks():
    messages = [msg("user", "H1"), msg("system", "NOTE {{outlet::w}}")]
    layout = {"conversation": {"messageIndices": [0], "emptyIndex": 0}, "authorNote": 1, "outlets": {"w": 1}}
    blocks = [{"id": "o", "position": "outlet", "outletName": "w", "content": "W"},
              {"id": "d", "position": "at_depth", "depth": 1, "content": "D"}]
    result = place_context_blocks(messages, layout, blocks)
    assert contents(result) == ["D", "H1", "NOTE W"]


def test_layout_may_be_none_and_blocks_may_be_models():
    blocks = [ContextBlock(id="c", position="at_depth", depth=0, role="user", content="C")]
    result = place_context_blocks([msg("user", "H")], {"conversation": {"message_indices": [0], "empty_index": 0}},
                                  blocks)
    assert result.messages[1] == msg("user", "C")
    empty = place_context_blocks([msg("user", "H")], None, [])
    assert isinstance(empty, PlacementResult) and empty.messages == [msg("user", "H")] and empty.placements == []


def test_result_dumps_to_json():
    result = place_context_blocks(FULL_MESSAGES, FULL_LAYOUT, [block("d", "at_depth", depth=1)])
    dumped = result.model_dump(mode="json")
    assert dumped["messages"][7] == {"role": "system", "content": "d"}
    assert dumped["placements"][0]["effective_depth"] == 1


def test_inputs_are_not_mutated():
    messages = copy.deepcopy(FULL_MESSAGES)
    layout = copy.deepcopy(FULL_LAYOUT)
    blocks = [block("t", "author_note_top"), block("o", "outlet", outlet_name="tail"), block("b", "before_examples")]
    before = copy.deepcopy((messages, layout, blocks))
    place_context_blocks(messages, layout, blocks)
    assert (messages, layout, blocks) == before


# --- errors ----------------------------------------------------------------------------------------------------------

TWO = [msg("system", "CHAR"), msg("user", "H")]
CHAR = {"character": {"start": 0, "end": 1}}
HIST = {"conversation": {"message_indices": [1], "empty_index": 1}}

# (messages, layout, blocks, code, words the message must contain)
ERROR_CASES = {
    "anchor: character": (TWO, {}, [block("a", "before_character")], "ANCHOR_MISSING", ["'a'", "character"]),
    "anchor: examples": (TWO, CHAR, [block("a", "after_examples")], "ANCHOR_MISSING", ["'a'", "examples"]),
    "anchor: conversation": (TWO, CHAR, [block("a", "at_depth", depth=0)], "ANCHOR_MISSING", ["conversation"]),
    "anchor: author note": (TWO, CHAR, [block("a", "author_note_top")], "ANCHOR_MISSING", ["author_note"]),
    "anchor: no outlets": (TWO, CHAR, [block("a", "outlet", outlet_name="x")], "ANCHOR_MISSING", ["outlets"]),
    "anchor: undeclared outlet": ([msg("system", "{{outlet::y}}")], {"outlets": {"y": 0}},
                                  [block("a", "outlet", outlet_name="x")], "ANCHOR_MISSING", ["'x'"]),
    "duplicate id": (TWO, CHAR, [block("a", "before_character"), block("a", "after_character")],
                     "DUPLICATE_BLOCK_ID", ["'a'"]),
    "role: tool": (TWO, CHAR, [block("a", "before_character", role="tool")], "INVALID_ROLE", ["'a'", "'tool'"]),
    "role: not a string": (TWO, CHAR, [block("a", "before_character", role=1)], "INVALID_ROLE", ["'a'"]),
    "role: differs from author note": (TWO, {"author_note": 0}, [block("a", "author_note_bottom", role="user")],
                                       "INVALID_ROLE", ["'a'", "'system'", "'user'"]),
    "role: differs from outlet host": ([msg("user", "{{outlet::o}}")], {"outlets": {"o": 0}},
                                       [block("a", "outlet", outlet_name="o", role="system")], "INVALID_ROLE", ["'a'"]),
    "nested outlet": ([msg("user", "{{outlet::o}}")], {"outlets": {"o": 0}},
                      [block("a", "outlet", "x {{outlet::o}}", outlet_name="o")], "NESTED_OUTLET", ["'a'"]),
    "nested outlet in a standalone block": (TWO, CHAR, [block("a", "before_character", "{{outlet::q}}")],
                                            "NESTED_OUTLET", ["'a'"]),
    "marker absent": ([msg("user", "no marker")], {"outlets": {"o": 0}}, [], "OUTLET_MARKER_COUNT", ["outlets.o", "0"]),
    "marker repeated": ([msg("user", "{{outlet::o}}{{outlet::o}}")], {"outlets": {"o": 0}}, [],
                        "OUTLET_MARKER_COUNT", ["outlets.o", "2"]),
    "layout: overlap": (TWO, {"character": {"start": 0, "end": 2}, "examples": {"start": 1, "end": 2}}, [],
                        "INVALID_LAYOUT", ["overlap"]),
    "layout: empty range inside another": (TWO, {"character": {"start": 0, "end": 2},
                                                 "examples": {"start": 1, "end": 1}}, [],
                                           "INVALID_LAYOUT", ["overlap"]),
    "layout: start > end": (TWO, {"character": {"start": 2, "end": 1}}, [], "INVALID_LAYOUT", ["character"]),
    "layout: end > len": (TWO, {"examples": {"start": 0, "end": 3}}, [], "INVALID_LAYOUT", ["examples.end"]),
    "layout: missing end": (TWO, {"examples": {"start": 0}}, [], "INVALID_LAYOUT", ["examples.end"]),
    "layout: boolean index": (TWO, {"author_note": True}, [], "INVALID_LAYOUT", ["author_note"]),
    "layout: author note out of range": (TWO, {"author_note": 2}, [], "INVALID_LAYOUT", ["author_note"]),
    "layout: unknown field": (TWO, {"authorNotes": 1}, [], "INVALID_LAYOUT", ["authorNotes"]),
    "layout: both spellings": (TWO, {"author_note": 1, "authorNote": 1}, [], "INVALID_LAYOUT", ["authorNote"]),
    "layout: history not increasing": ([msg("user", "a"), msg("user", "b")],
                                       {"conversation": {"message_indices": [1, 0], "empty_index": 0}}, [],
                                       "INVALID_LAYOUT", ["message_indices[1]"]),
    "layout: history repeated": (TWO, {"conversation": {"message_indices": [1, 1], "empty_index": 0}}, [],
                                 "INVALID_LAYOUT", ["message_indices[1]"]),
    "layout: history out of range": (TWO, {"conversation": {"message_indices": [2], "empty_index": 0}}, [],
                                     "INVALID_LAYOUT", ["message_indices[0]"]),
    "layout: history inside character": (TWO, {**CHAR, "conversation": {"message_indices": [0], "empty_index": 0}},
                                         [], "INVALID_LAYOUT", ["character"]),
    "layout: history is the author note": (TWO, {"author_note": 1, **HIST}, [], "INVALID_LAYOUT", ["author-note"]),
    "layout: history hosts an outlet": ([msg("user", "{{outlet::o}}")],
                                        {"outlets": {"o": 0}, "conversation": {"message_indices": [0],
                                                                               "empty_index": 0}},
                                        [], "INVALID_LAYOUT", ["outlet 'o'"]),
    "layout: empty index > len": (TWO, {"conversation": {"message_indices": [], "empty_index": 3}}, [],
                                  "INVALID_LAYOUT", ["empty_index"]),
    "layout: empty index missing": (TWO, {"conversation": {"message_indices": [1]}}, [], "INVALID_LAYOUT",
                                    ["empty_index"]),
    "layout: host content not text": ([{"role": "user", "content": [{"type": "text"}]}], {"author_note": 0}, [],
                                      "INVALID_LAYOUT", ["author_note"]),
    "layout: messages not a list": ("hello", {}, [], "INVALID_LAYOUT", ["messages"]),
    "block: unknown position": (TWO, CHAR, [block("a", "before")], "INVALID_BLOCK", ["'a'", "'before'"]),
    "block: missing depth": (TWO, HIST, [block("a", "at_depth")], "INVALID_BLOCK", ["'a'", "depth"]),
    "block: negative depth": (TWO, HIST, [block("a", "at_depth", depth=-1)], "INVALID_BLOCK", ["-1"]),
    "block: boolean depth": (TWO, HIST, [block("a", "at_depth", depth=True)], "INVALID_BLOCK", ["True"]),
    "block: depth on non-depth block": (TWO, CHAR, [block("a", "after_character", depth=2)], "INVALID_BLOCK",
                                        ["'a'", "at_depth"]),
    "block: missing outlet name": ([msg("user", "{{outlet::o}}")], {"outlets": {"o": 0}}, [block("a", "outlet")],
                                   "INVALID_BLOCK", ["outlet_name"]),
    "block: outlet name on another position": (TWO, CHAR, [block("a", "after_character", outlet_name="o")],
                                               "INVALID_BLOCK", ["outlet_name"]),
    "block: string order": (TWO, CHAR, [block("a", "after_character", order="1")], "INVALID_BLOCK", ["order"]),
    "block: boolean order": (TWO, CHAR, [block("a", "after_character", order=False)], "INVALID_BLOCK", ["order"]),
    "block: float order": (TWO, CHAR, [block("a", "after_character", order=1.0)], "INVALID_BLOCK", ["order"]),
    "block: content not text": (TWO, CHAR, [{"id": "a", "position": "after_character", "content": 5}],
                                "INVALID_BLOCK", ["'a'", "content"]),
    "block: missing id": (TWO, CHAR, [{"position": "after_character", "content": "x"}], "INVALID_BLOCK",
                          ["blocks[0].id"]),
    "block: not an object": (TWO, CHAR, ["after_character"], "INVALID_BLOCK", ["blocks[0]"]),
}


@pytest.mark.parametrize("case", ERROR_CASES.values(), ids=ERROR_CASES.keys())
def test_errors_carry_a_stable_code_and_name_the_culprit(case):
    messages, layout, blocks, code, words = case
    with pytest.raises(PlacementError) as error:
        place_context_blocks(messages, layout, blocks)
    assert error.value.code == code
    for word in words:
        assert word in str(error.value)


def test_error_detail_names_the_block_or_field():
    with pytest.raises(PlacementError) as error:
        place_context_blocks(TWO, {}, [block("lore-1", "after_examples")])
    assert error.value.detail == {"block_id": "lore-1", "field": "examples"}
    assert error.value.status == 422
    with pytest.raises(PlacementError) as error:
        place_context_blocks(TWO, {"examples": {"start": 0, "end": 9}}, [])
    assert error.value.detail == {"field": "examples.end"}


def test_render_hooks_that_return_the_wrong_thing_fail_with_the_block_ids():
    with pytest.raises(PlacementError) as error:
        place_context_blocks(TWO, CHAR, [block("a", "after_character")], render_block=lambda b: 42)
    assert error.value.code == "INVALID_BLOCK" and "'a'" in str(error.value) and "render_block" in str(error.value)
    with pytest.raises(PlacementError) as error:
        place_context_blocks(TWO, CHAR, [block("a", "after_character")], render_block=lambda b: "{{outlet::z}}")
    assert error.value.code == "NESTED_OUTLET"
    with pytest.raises(PlacementError) as error:
        place_context_blocks(TWO, CHAR, [block("a", "after_character")], render_messages=lambda blocks: [])
    assert error.value.code == "INVALID_BLOCK" and "'a'" in str(error.value)


# --- capabilities ----------------------------------------------------------------------------------------------------

CAPABILITY_CASES = [
    ({}, [], []),
    (None, [], []),
    (CHAR, ["before_character", "after_character"], []),
    ({"examples": {"start": 0, "end": 0}}, ["before_examples", "after_examples"], []),
    (HIST, ["at_depth"], []),
    ({"authorNote": 3}, ["author_note_top", "author_note_bottom"], []),
    ({"outlets": {"b": 1, "a": 2}}, ["outlet"], ["b", "a"]),
    ({"outlets": {}}, [], []),
    ({"author_note": None, "character": None}, [], []),
    (FULL_LAYOUT, ["before_character", "after_character", "before_examples", "after_examples", "at_depth",
                   "author_note_top", "author_note_bottom", "outlet"], ["tail"]),
]


@pytest.mark.parametrize(("layout", "positions", "outlets"), CAPABILITY_CASES)
def test_capabilities_list_what_the_declared_anchors_allow(layout, positions, outlets):
    assert get_placement_capabilities(layout) == {"positions": positions, "outlets": outlets}


def test_capabilities_do_not_check_indices_but_reject_a_malformed_layout():
    # Cheap: an index past the end is only caught when placing.
    assert get_placement_capabilities({"author_note": 99}) == {
        "positions": ["author_note_top", "author_note_bottom"], "outlets": []}
    with pytest.raises(PlacementError) as error:
        get_placement_capabilities(["character"])
    assert error.value.code == "INVALID_LAYOUT"
    with pytest.raises(PlacementError) as error:
        get_placement_capabilities({"charcter": {"start": 0, "end": 1}})
    assert error.value.code == "INVALID_LAYOUT" and "charcter" in str(error.value)


def _deep(depth: int) -> list:
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize("bad", [{"order": _deep(5000)}, {"position": "at_depth", "depth": _deep(5000)},
                                 {"role": _deep(5000)}])
def test_a_deeply_nested_field_is_refused_with_a_short_description(bad):
    fields = {"position": "before_character", **bad}
    with pytest.raises(PlacementError) as error:
        place_context_blocks([msg("system", "CHAR")], {"character": {"start": 0, "end": 1}},
                             [block("b", fields.pop("position"), **fields)])
    assert error.value.code in ("INVALID_BLOCK", "INVALID_ROLE") and "list of 1 item(s)" in error.value.message
