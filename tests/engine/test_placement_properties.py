"""Property tests for the placement primitive (engine.md §2) over random valid layouts and blocks."""

import copy
import random
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from assembly.placement import get_placement_capabilities, place_context_blocks

ROLES = ("system", "user", "assistant")
REGION_POSITIONS = {"before_character", "after_character", "before_examples", "after_examples"}


@st.composite
def scenarios(draw):
    """A valid (messages, layout, blocks) triple; every message and block text is unique and easy to find."""
    count = draw(st.integers(0, 12))
    roles = draw(st.lists(st.sampled_from(ROLES), min_size=count, max_size=count))
    layout = {}

    # Two disjoint ranges from four sorted cut points; either may be absent, either may come first.
    cuts = sorted(draw(st.lists(st.integers(0, count), min_size=4, max_size=4)))
    ranges = [(cuts[0], cuts[1]), (cuts[2], cuts[3])]
    if draw(st.booleans()):
        ranges.reverse()
    for name, (start, end) in zip(("character", "examples"), ranges, strict=True):
        if draw(st.booleans()):
            layout[name] = {"start": start, "end": end}

    taken = set()
    if count and draw(st.booleans()):
        layout["author_note"] = draw(st.integers(0, count - 1))
        taken.add(layout["author_note"])
    markers = {i: "" for i in range(count)}
    if count:
        outlets = {}
        for name in draw(st.lists(st.sampled_from(["lore", "rules", "mood"]), unique=True, max_size=3)):
            host = draw(st.integers(0, count - 1))
            outlets[name] = host
            markers[host] += f" {{{{outlet::{name}}}}} ."
            taken.add(host)
        if outlets:
            layout["outlets"] = outlets

    if draw(st.booleans()):
        in_region = {i for r in ("character", "examples") if r in layout
                     for i in range(layout[r]["start"], layout[r]["end"])}
        candidates = [i for i in range(count) if i not in in_region and i not in taken]
        history = sorted(draw(st.sets(st.sampled_from(candidates)))) if candidates else []
        layout["conversation"] = {"message_indices": history, "empty_index": draw(st.integers(0, count))}

    messages = [{"role": roles[i], "content": f"m{i}{markers[i]}", "tag": [i]} for i in range(count)]
    if draw(st.booleans()):  # the seeds' spelling
        layout = {{"author_note": "authorNote"}.get(k, k): v for k, v in layout.items()}
        if "conversation" in layout:
            conversation = layout["conversation"]
            layout["conversation"] = {"messageIndices": conversation["message_indices"],
                                      "emptyIndex": conversation["empty_index"]}

    positions = get_placement_capabilities(layout)["positions"]
    blocks = []
    if positions:
        ids = draw(st.permutations(range(draw(st.integers(0, 10)))))
        for number in ids:
            position = draw(st.sampled_from(positions))
            item = {"id": f"b{number}", "position": position, "content": f"<b{number}>",
                    "order": draw(st.integers(-2, 2))}
            if position == "at_depth":
                item["depth"] = draw(st.integers(0, 14))
            if position == "outlet":
                item["outletName" if draw(st.booleans()) else "outlet_name"] = draw(
                    st.sampled_from(sorted(layout["outlets"])))
            host = _host_index(layout, item)
            role_choices = [None, *ROLES] if host is None else [None, messages[host]["role"]]
            role = draw(st.sampled_from(role_choices))
            if role is not None:
                item["role"] = role
            blocks.append(item)
    return messages, layout, blocks


def _host_index(layout, item):
    if item["position"] == "outlet":
        return layout["outlets"][item.get("outlet_name") or item.get("outletName")]
    if item["position"].startswith("author_note"):
        return layout.get("author_note", layout.get("authorNote"))
    return None


def _history(layout):
    conversation = layout.get("conversation")
    if conversation is None:
        return None
    return conversation.get("message_indices", conversation.get("messageIndices"))


def _standalone_indices(result):
    return {r.message_index for r in result.placements if not r.embedded}


def _original_index_of(result):
    """Result index -> original index for every message that is not a standalone block."""
    standalone = _standalone_indices(result)
    kept = [i for i in range(len(result.messages)) if i not in standalone]
    return {result_index: original for original, result_index in enumerate(kept)}


@settings(max_examples=300, deadline=None)
@given(scenarios())
def test_every_block_appears_exactly_once(scenario):
    messages, layout, blocks = scenario
    result = place_context_blocks(messages, layout, blocks)
    standalone = [b for b in blocks if _host_index(layout, b) is None]
    assert len(result.messages) == len(messages) + len(standalone)
    assert sorted(r.id for r in result.placements) == sorted(b["id"] for b in blocks)
    assert len(_standalone_indices(result)) == len(standalone)  # one message each

    by_id = {b["id"]: b for b in blocks}
    for record in result.placements:
        text = by_id[record.id]["content"]
        occurrences = [i for i, m in enumerate(result.messages) if text in m["content"]]
        assert occurrences == [record.message_index]
        assert result.messages[record.message_index]["content"].count(text) == 1
        host = _host_index(layout, by_id[record.id])
        if host is None:
            expected_role = by_id[record.id].get("role", "system")
            assert result.messages[record.message_index] == {"role": expected_role, "content": text}
            assert record.role == expected_role and not record.embedded
        else:
            assert record.embedded and record.role == messages[host]["role"]
            assert _original_index_of(result)[record.message_index] == host


@settings(max_examples=300, deadline=None)
@given(scenarios())
def test_original_messages_keep_their_order_and_content(scenario):
    messages, layout, blocks = scenario
    result = place_context_blocks(messages, layout, blocks)
    hosts = set((layout.get("outlets") or {}).values())
    hosts |= {_host_index(layout, b) for b in blocks} - {None}
    for result_index, original in _original_index_of(result).items():
        kept = result.messages[result_index]
        if original in hosts:
            assert kept is not messages[original]
            assert kept["role"] == messages[original]["role"] and kept["tag"] == [original]
            assert "{{outlet::" not in kept["content"]
            # The host's own text starts a line (author-note blocks go on lines above and below it).
            assert re.search(rf"(^|\n)m{original}( |\n|$)", kept["content"])
        else:
            assert kept is messages[original]


@settings(max_examples=200, deadline=None)
@given(scenarios())
def test_inputs_are_unchanged(scenario):
    before = copy.deepcopy(scenario)
    place_context_blocks(*scenario)
    assert scenario == before


@settings(max_examples=200, deadline=None)
@given(scenarios(), st.randoms(use_true_random=False))
def test_placement_is_deterministic_and_ignores_input_order(scenario, rng: random.Random):
    messages, layout, blocks = scenario
    first = place_context_blocks(messages, layout, blocks).model_dump(mode="json")
    assert place_context_blocks(messages, layout, blocks).model_dump(mode="json") == first
    shuffled = list(blocks)
    rng.shuffle(shuffled)
    assert place_context_blocks(messages, layout, shuffled).model_dump(mode="json") == first


@settings(max_examples=300, deadline=None)
@given(scenarios())
def test_depth_and_region_blocks_sit_where_the_spec_says(scenario):
    messages, layout, blocks = scenario
    result = place_context_blocks(messages, layout, blocks)
    original_at = _original_index_of(result)
    by_id = {b["id"]: b for b in blocks}
    history = _history(layout)
    for record in result.placements:
        position = record.position
        if position == "at_depth":
            after = [i for i in range(record.message_index + 1, len(result.messages))
                     if original_at.get(i) in set(history)]
            assert record.effective_depth == min(by_id[record.id]["depth"], len(history)) == len(after)
        elif position in REGION_POSITIONS:
            side, region = position.split("_", 1)
            start, end = layout[region]["start"], layout[region]["end"]
            before = [original_at[i] for i in range(record.message_index) if i in original_at]
            # Exactly the messages before the insertion point precede the block.
            assert before == list(range(start if side == "before" else end))
            assert record.insertion_point == (start if side == "before" else end)
