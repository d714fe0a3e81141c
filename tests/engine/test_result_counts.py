"""The result's counts, rows and entries: the framing beside the contents, counts of each text, position rows and
layout entries of the nodes, request messages of one or several nodes, the history as the host keeps it."""

from types import SimpleNamespace

from assembly import assemble
from assembly.blocks import Node
from assembly.host import conversation_history, request_message
from assembly.layout import layout_blocks
from assembly.model_catalogue import FRAMINGS, framing_total, request_total
from assembly.positions import position_rows
from assembly.tokens import count_tokens
from tests.engine.test_positions import fixture_request, strategy


def _message(role, content, name=None):
    return SimpleNamespace(role=role, content=content, name=name)


def test_the_framing_is_what_the_chat_format_adds_beside_the_contents():
    # "system", "user" and "bob" are one o200k token each (checked first, so the sum below is reasoned by hand).
    assert [count_tokens(t) for t in ("system", "user", "bob")] == [1, 1, 1]
    messages = [_message("system", "Be brief."), _message("user", "Hello there", name="bob")]
    # openai: 3 for the reply; per message 3 plus its role's token; a name costs 1 plus its own token.
    assert framing_total(messages, "o200k_base", FRAMINGS["openai"]) == 3 + (3 + 1) + (3 + 1) + (1 + 1)
    contents = count_tokens("Be brief.") + count_tokens("Hello there")
    assert request_total(messages, "o200k_base", FRAMINGS["openai"]) == contents + 13
    # mistral spells no role out; a system message costs the "\n\n" that joins it to the user turn
    assert framing_total(messages, "o200k_base", FRAMINGS["mistral"]) == 1 + count_tokens("\n\n") + 2


def test_request_total_takes_a_generator_once():
    messages = [_message("user", "one"), _message("assistant", "two")]
    assert request_total(iter(messages), "o200k_base", FRAMINGS["openai"]) == request_total(
        messages, "o200k_base", FRAMINGS["openai"])


def test_a_results_framed_total_is_the_request_counted_again():
    for tokenizer in ("o200k_base", "llama3"):
        raw = fixture_request(strategy())
        raw["tokenizer"] = tokenizer
        raw["conversation"]["history"].append({"id": "named", "role": "user", "content": "Hi", "name": "bob"})
        tokens = assemble(raw).tokens
        messages = assemble(raw).request.messages
        assert tokens.request_total == request_total(messages, tokenizer, FRAMINGS[tokens.framing])
        assert tokens.total == sum(count_tokens(m.content, tokenizer) for m in messages)


def _node(node_id, module, *, position_id="content", locked=False, lock_reason=None, slot_id=None):
    return Node(id=node_id, rule_id=module, module=module, name=module, role="system", original_role="system",
                text=node_id, trust="system", position_id=position_id, locked=locked, lock_reason=lock_reason,
                slot_id=slot_id)


def _row(rows, key):
    return next(r for r in rows if r.key == key)


def test_a_row_whose_nodes_are_apart_is_split_and_one_run_is_not():
    doc = {"rules": [], "layout": {"positions": [{"sourceId": "char", "positionId": "p"},
                                                 {"sourceId": "lore", "positionId": "q"},
                                                 {"sourceId": "none", "positionId": "r"}]}}
    nodes = [_node("a", "char", position_id="p", locked=True, lock_reason="slot", slot_id="s1"),
             _node("b", "lore", position_id="q"), _node("c", "lore", position_id="q"),
             _node("d", "char", position_id="p")]
    rows = position_rows(doc, nodes, [])
    char, lore, none = _row(rows, "char#p"), _row(rows, "lore#q"), _row(rows, "none#r")
    assert (char.node_ids, char.split, char.locked, char.partly_locked) == (["a", "d"], True, False, True)
    assert (char.lock_reasons, char.held_by, char.decisions) == (["slot"], ["s1"], ["source"])
    assert (lore.node_ids, lore.split, lore.locked, lore.partly_locked) == (["b", "c"], False, False, False)
    assert (none.node_ids, none.empty, none.split, none.lock_reasons, none.decisions) == ([], True, False, [], [])
    # each row's lists are its own
    none.node_ids.append("x")
    assert _row(position_rows(doc, nodes, []), "none#r").node_ids == []


def test_layout_blocks_name_the_nodes_of_their_run():
    nodes = [_node("a", "char"), _node("b", "char"), _node("c", "lore"), _node("d", "char")]
    for node in nodes:
        node.field = "description"  # one group per module: a node without block or field is a group of its own
    blocks = layout_blocks(nodes, "core")
    assert [b.node_ids for b in blocks] == [["a", "b"], ["c"], ["d"]]
    assert blocks[0].id.endswith(":run:a") and blocks[2].id.endswith(":run:d")  # the char key has two runs


def test_a_message_of_one_node_takes_its_id_and_trust_and_of_several_the_least_trusted():
    one = _node("a", "char")
    one.trust = "user"
    other = _node("b", "char")
    other.trust = "tool"
    single = request_message([one], role="system", content="a", delivery="request", region="request",
                             status="request-only", tokenizer="o200k_base")
    joined = request_message([one, other], role="system", content="a b", delivery="request", region="request",
                             status="request-only", tokenizer="o200k_base")
    empty = request_message([], role="user", content="", delivery="context", region="after-input",
                            status="appended", tokenizer="o200k_base")
    assert (single.parts, single.trust, single.enters_history) == (["a"], "user", False)
    assert (joined.parts, joined.trust, joined.tokens) == (["a", "b"], "tool", count_tokens("a b"))
    assert (empty.parts, empty.trust, empty.tool_calls) == ([], "system", None)


def test_the_history_leaves_out_log_records_and_system_records_unless_kept():
    history = [{"id": "1", "role": "user", "content": "a"},
               {"id": "2", "role": "system", "content": "", "source": {"kind": "request-assembly"}},
               {"id": "3", "role": "system", "content": "S", "source": {"kind": "system-prompt"}},
               {"id": "4", "role": "user", "content": "b", "source": {}},
               {"id": "5", "role": "user", "content": "c", "source": None}]
    assert [m["id"] for m in conversation_history(history, keep_system_records=False)] == ["1", "4", "5"]
    assert [m["id"] for m in conversation_history(history, keep_system_records=True)] == ["1", "3", "4", "5"]
