"""The host simulator across turns (engine.md §7; reference A.8 delivery semantics, A.4 runtime-context controls)."""

import dataclasses
import hashlib
import uuid

import pytest

from assembly import assemble
from assembly.blocks import Node
from assembly.host import commit_turn, content_id, request_message
from assembly.native import CONTEXT_FRAMING, CONTEXT_INVALIDATION

RULES = ["native-system", "preset", "persona", "character", "worldbook", "history", "input", "phi"]


def native_strategy(*, native_system=True, extra_rules=()):
    rules = [{"id": k, "kind": k, "enabled": native_system or k != "native-system"} for k in RULES]
    rules.extend(extra_rules)
    return {"format": "dsh-tavern-request-assembly", "version": 1, "name": "host", "backend": "native",
            "placement": "native-roles", "rules": rules}


PROMPTS = [{"identifier": "main", "role": "system", "content": "RULES"},
           {"identifier": "chatHistory", "marker": True},
           {"identifier": "jailbreak", "role": "user", "content": "STAY IN CHARACTER"}]


def turn(history, text, *, strategy=None, contexts=(), prompts=PROMPTS, sections=("BASE",), update="head"):
    return assemble({
        "strategy": strategy or native_strategy(),
        "resources": {"preset": {"prompts": list(prompts)}},
        "conversation": {"history": history, "input": [{"id": f"u{len(history)}", "role": "user", "content": text}]},
        "host": {"official_sections": [{"name": "base", "text": s} for s in sections],
                 "contexts": [{"name": n, "text": t} for n, t in contexts], "system_prompt_update": update},
    })


def step(history, text, reply, **kwargs):
    result = turn(history, text, **kwargs)
    return result, commit_turn(history, result, reply)


def kinds(history):
    return [(m.get("source") or {}).get("kind") for m in history]


def test_first_turn_records_the_system_surface_the_input_and_the_context():
    result = turn([], "hi")
    messages = result.request.messages
    assert [(m.role, m.delivery, m.history_status) for m in messages] == [
        ("system", "system", "appended"), ("user", "input", "appended"), ("user", "context", "appended")]
    assert messages[0].content == "BASE\n\nRULES"
    assert messages[2].content == CONTEXT_FRAMING + "\n\nSTAY IN CHARACTER"
    assert kinds([e.model_dump() for e in result.durable_events]) == ["system-prompt", None, "runtime-context"]


def test_an_unchanged_context_is_reused_where_it_stands():
    _, history = step([], "hi", "hello")
    second, history = step(history, "how are you", "fine")
    statuses = [(m.delivery, m.history_status) for m in second.request.messages]
    assert ("context", "reused") in statuses and statuses.count(("context", "appended")) == 0
    # the reused snapshot sits in history before this step's input (the NATIVE_CONTEXT_REUSES_HISTORY_POSITION caveat)
    reused = next(i for i, m in enumerate(second.request.messages) if m.history_status == "reused")
    assert reused < next(i for i, m in enumerate(second.request.messages) if m.delivery == "input")
    assert second.request.messages[0].history_status == "native"  # same system surface: nothing new recorded
    assert kinds(history).count("runtime-context") == 1


def test_a_changed_context_appends_a_new_snapshot():
    _, history = step([], "hi", "hello", contexts=[("sandbox:policy", "read-only")])
    second, history = step(history, "and now?", "ok", contexts=[("sandbox:policy", "workspace-write")])
    new = [m for m in second.request.messages if m.delivery == "context" and m.history_status == "appended"]
    assert len(new) == 1 and "workspace-write" in new[0].content
    assert kinds(history).count("runtime-context") == 2


def test_removing_every_context_appends_the_invalidation_text_once():
    no_context = [PROMPTS[0], PROMPTS[1]]
    _, history = step([], "hi", "hello")
    second, history = step(history, "bye", "bye", prompts=no_context)
    assert second.request.messages[-1].content == CONTEXT_INVALIDATION
    third, _ = step(history, "again", "again", prompts=no_context)
    assert CONTEXT_INVALIDATION not in [m.content for m in third.request.messages if m.history_status == "appended"]


def test_pre_step_messages_accumulate_one_per_step():
    pre = [PROMPTS[0], PROMPTS[1], {"identifier": "jailbreak", "role": "user", "content": "REMEMBER"}]
    strategy = native_strategy()
    strategy["rules"][1]["delivery"] = "pre-step"
    history: list = []
    for text in ("one", "two", "three"):
        result, history = step(history, text, "ok", prompts=pre, strategy=strategy)
    assert [m["content"] for m in history if (m.get("source") or {}).get("kind") == "dsh-prompt-assembler"] == [
        "REMEMBER"] * 3
    last = result.request.messages
    assert [m.content for m in last].count("REMEMBER") == 3 and last[-1].history_status == "appended"


def test_host_records_read_back_from_history_keep_the_trust_they_were_sent_with():
    # spec engine.md §1: `user` trust is what the end user wrote; the host's records and the assembler's pre-step
    # instructions come back from history as they went, though their role is user
    pre = [PROMPTS[0], PROMPTS[1], {"identifier": "jailbreak", "role": "user", "content": "REMEMBER"}]
    strategy = native_strategy()
    strategy["rules"][1]["delivery"] = "pre-step"
    first, history = step([], "one", "ok", prompts=pre, strategy=strategy, contexts=[("sandbox", "read-only")])
    sent = {m.delivery: m.trust for m in first.request.messages}
    assert sent == {"system": "operator", "input": "user", "context": "system", "pre-step": "operator"}
    assert [(m.get("source") or {}).get("trust") for m in history] == ["operator", None, "system", "operator", None]
    second = turn(history, "two", prompts=pre, strategy=strategy, contexts=[("sandbox", "read-only")])
    read_back = [(m.content[:8], m.history_status, m.trust) for m in second.request.messages
                 if m.history_status in ("native", "reused")]
    assert read_back == [("BASE\n\nRU", "native", "operator"), ("one", "native", "user"),
                         ("Current ", "reused", "system"), ("REMEMBER", "native", "operator"),
                         ("ok", "native", "operator")]


@pytest.mark.parametrize(("source", "trust"), [
    ({"kind": "dsh-prompt-assembler"}, "operator"),  # written before records kept their trust: the kind's
    ({"kind": "dsh-prompt-assembler", "trust": "system"}, "operator"),  # never more than the kind's
    ({"kind": "dsh-prompt-assembler", "trust": "tool"}, "tool"),
    ({"kind": "runtime-context", "trust": "bogus"}, "system"),
    ({"kind": "user", "trust": "system"}, "user"),  # the end user's message: by its role, whatever it claims
    (None, "user"),
])
def test_a_history_messages_trust_follows_its_record_kind(source, trust):
    history = [{"id": "h1", "role": "user", "content": "earlier", **({"source": source} if source else {})},
               {"id": "h2", "role": "assistant", "content": "reply"}]
    result = turn(history, "now")
    assert next(m.trust for m in result.request.messages if m.content == "earlier") == trust


def test_disabling_native_system_keeps_the_recorded_event_but_not_the_request_head():
    _, history = step([], "hi", "hello")
    recorded = [m for m in history if (m.get("source") or {}).get("kind") == "system-prompt"]
    second = turn(history, "next", strategy=native_strategy(native_system=False))
    assert second.request.messages[0].content == "RULES"  # the official BASE section is no longer carried
    assert second.request.starts_request_series  # the effective system surface changed: the host reconciles
    assert recorded and recorded[0]["content"] == "BASE\n\nRULES"  # history keeps what was recorded


def test_in_history_hosts_record_a_changed_system_surface_before_the_input():
    _, history = step([], "hi", "hello", update="in-history")
    second = turn(history, "next", sections=("BASE v2",), update="in-history")
    roles = [(m.role, m.region, m.history_status) for m in second.request.messages]
    assert roles[0] == ("system", "history", "native")  # the old surface stays where it stands
    update = next(i for i, m in enumerate(second.request.messages) if m.content == "BASE v2\n\nRULES")
    assert second.request.messages[update].history_status == "appended"
    assert second.request.messages[update + 1].delivery == "input"


def test_core_series_starts_when_the_strategy_revision_changes():
    def core_turn(history, strategy):
        return assemble({"strategy": strategy, "resources": {"preset": {"prompts": PROMPTS}},
                         "conversation": {"history": history, "input": [{"id": f"u{len(history)}", "role": "user",
                                                                          "content": "x"}]},
                         "host": {"core_available": True}})

    first = core_turn([], "builtin-st")
    assert not first.request.starts_request_series
    history = commit_turn([], first, "ok")
    assert not core_turn(history, "builtin-st").request.starts_request_series
    other = {"format": "dsh-tavern-request-assembly", "version": 1, "name": "other", "placement": "st",
             "rules": [{"id": k, "kind": k} for k in RULES]}
    assert core_turn(history, other).request.starts_request_series
    # the log-only record is never sent
    assert all(m.content != "" or m.role != "system" for m in core_turn(history, "builtin-st").request.messages)


def test_commit_turn_never_mutates_the_history():
    history = [{"id": "u0", "role": "user", "content": "earlier"}]
    snapshot = [dict(m) for m in history]
    result = turn(history, "hi")
    new = commit_turn(history, result, "hello")
    assert history == snapshot and new[-1]["role"] == "assistant" and new[-1]["content"] == "hello"


# A.14.3 runtime-context controls ------------------------------------------------------------------------------------

CONTEXTS = [("sandbox:policy", "S"), ("approval:policy", "A"), ("subagent:delegation", "D"), ("worldbook", "W"),
            ("memory-manager", "M"), ("sandbox:custom", "C")]


@pytest.mark.parametrize(
    ("control", "kept"),
    [
        (None, ["S", "A", "D", "W", "M", "C"]),
        ({"id": "dsh-sandbox-policy", "kind": "dsh.sandbox-policy", "enabled": False}, ["A", "D", "W", "M", "C"]),
        ({"id": "dsh-runtime-context", "kind": "dsh.runtime-context", "enabled": False}, ["W", "M", "C"]),
    ],
)
def test_c1_controls_filter_exact_section_names(control, kept):
    strategy = native_strategy(extra_rules=[control] if control else [])
    result = turn([], "hi", strategy=strategy, contexts=CONTEXTS, prompts=PROMPTS[:2])
    context = next(m for m in result.request.messages if m.delivery == "context")
    assert context.content == CONTEXT_FRAMING + "\n\n" + "\n\n".join(kept)
    preview = {c.name: c.enabled for c in result.runtime_context_controls}
    assert list(preview) == ["sandbox:policy", "approval:policy", "subagent:delegation"]
    assert [n for n, on in preview.items() if on] == [n for n, t in CONTEXTS[:3] if t in kept]


def test_every_request_message_carries_its_trust():
    result = turn([{"id": "t0", "role": "user", "content": "earlier"}], "hi", contexts=[("sandbox:policy", "S")])
    trust = {m.delivery: m.trust for m in result.request.messages}
    assert trust == {"system": "operator", "history": "user", "input": "user", "context": "operator"}
    # user content never becomes a system message
    assert all(m.trust not in ("user", "tool") for m in result.request.messages if m.role == "system")


def test_a_content_id_is_the_version_5_uuid_of_its_parts_digest():
    for parts in [(), ("",), ("a",), ("request-assembly", "rev", "h1", "i1"), ("é", "\x00", "ü" * 40)]:
        digest = hashlib.sha256("\x00".join(parts).encode()).digest()
        assert content_id(*parts) == str(uuid.UUID(bytes=digest[:16], version=5))


def test_a_request_message_carries_each_value_under_its_own_name():
    native = {"id": "h7", "role": "assistant", "content": "", "tool_calls": [{"id": "c1"}], "tool_call_id": "t9"}
    node = Node(id="history:h7", rule_id="history", module="history", name="h7", role="assistant",
                original_role="assistant", text="", trust="user", message=native)
    message = request_message([node], "assistant", "said", "history", "history", "native", "o200k_base",
                              None, "Ann", "", 5)
    assert dataclasses.asdict(message) == {
        "id": "h7", "role": "assistant", "content": "said", "tokens": 5, "delivery": "history", "region": "history",
        "enters_history": True, "history_status": "native", "parts": ["history:h7"], "trust": "user",
        "name": "Ann", "tool_calls": [{"id": "c1"}], "tool_call_id": "t9"}
    assert message.tool_calls[0] is not native["tool_calls"][0]  # the result's own copy
