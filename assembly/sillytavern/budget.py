"""SillyTavern's token budget (sillytavern.md §6): what fits in max_context - max_tokens, in its processing order.

StBudgetGroup: a mandatory piece for the budget: id, messages, reserve (bool). `reserve=True` marks SillyTavern's
    control prompts (impersonate, quiet) and the continue prefill: budgeted where they stand in the processing order,
    placed at the very end.

StBudgetResult (from `st_budget`): limit, remaining, groups (the mandatory groups kept, processing order),
    group_ids (every non-reserved group given), history (the chatHistory slot: new-chat separator, the history kept,
    the send_if_empty message), examples (the dialogueExamples slot), tail (continue collection, then control
    prompts), dropped (StDropped: id, part, reason, tokens, message_ids, sources), tokens (message id -> count),
    failure (StBudgetFailure or None: code ST_MANDATORY_PROMPTS_EXCEED_CONTEXT, message "Mandatory prompts exceed the
    context size.", item, needed, available).

Tokens: SillyTavern picks a tokenizer per model; we count with a tiktoken encoding the caller names (`o200k_base` or
`cl100k_base`). Per message: tokens(role) + tokens(content) + 3, plus tokens(name) + 1 with a name; 0 for an empty
unnamed message.
"""

# No `from __future__ import annotations`: pydantic reads these annotations as objects, where it would compile
# each string one at a time when a fresh process imports the engine.

from collections.abc import Sequence
from typing import Literal, NamedTuple

from pydantic import SkipValidation

from assembly.sillytavern.messages import StMessage, _Frozen, checked_encoding, step_invalid, unique_ids
from assembly.tokens import count_tokens

PRIMING_TOKENS = 3  # reserved for reply priming before anything else (§4.2 step 1)
# §4.2 step 8 (tool definitions) reserves nothing here: SillyTavern reserves them only when function calling is on,
# and the studio registers no tools, so that step never applies.
MANDATORY_OVERFLOW_CODE = "ST_MANDATORY_PROMPTS_EXCEED_CONTEXT"
MANDATORY_OVERFLOW_MESSAGE = "Mandatory prompts exceed the context size."


class StBudgetGroup(NamedTuple):
    """A mandatory piece of the budget: a typed tuple, as its messages are (one per prompt of every request)."""

    id: str
    messages: tuple[StMessage, ...] = ()
    reserve: bool = False


DropPart = Literal["mandatory", "reserved", "history", "new_chat", "send_if_empty", "continue", "examples"]
DropReason = Literal[
    "over_budget", "after_cut", "mandatory_overflow", "not_reached", "no_history_slot", "no_examples_slot", "empty",
]


class StDropped(_Frozen):
    """Something the budget left out.

    Reasons: over_budget (it did not fit in what was left), after_cut (an earlier history message or example block
    did not fit; SillyTavern stops at the first miss), mandatory_overflow (this mandatory piece did not fit: the
    failure), not_reached (processing stopped at a mandatory overflow before it), no_history_slot /
    no_examples_slot (the preset has no enabled chatHistory / dialogueExamples, §11.9), empty (no content: never sent).
    """

    id: str
    part: DropPart
    reason: DropReason
    tokens: int
    message_ids: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()


class StBudgetFailure(_Frozen):
    code: str = MANDATORY_OVERFLOW_CODE
    message: str = MANDATORY_OVERFLOW_MESSAGE
    item: str
    needed: int
    available: int


class StBudgetResult(_Frozen):
    limit: int
    remaining: int
    groups: SkipValidation[tuple[StBudgetGroup, ...]]
    group_ids: tuple[str, ...]
    history: SkipValidation[tuple[StMessage, ...]]
    examples: SkipValidation[tuple[StMessage, ...]]
    tail: SkipValidation[tuple[StMessage, ...]]
    dropped: tuple[StDropped, ...]
    tokens: SkipValidation[dict[str, int]]  # the ledger's table, made for this result: one entry per message
    failure: StBudgetFailure | None = None


# ---------------------------------------------------------------------------------------------------------- tokens


def st_message_tokens(m: StMessage, encoding: str = "o200k_base") -> int:
    """Tokens SillyTavern charges one message (§6): role + content + 3, plus name + 1 when named; 0 when empty."""
    return _message_tokens(m, checked_encoding(encoding))


def _message_tokens(m: StMessage, encoding: str, contents: dict[str, int] | None = None,
                    roles: dict[str, int] | None = None) -> int:
    """`st_message_tokens` for an encoding already checked (the budget checks it once, not once per message);
    `contents`, when given, gets the count of the message's content under its id; `roles`, when given, keeps each
    role's count for this budget (a handful of roles, counted once each)."""
    content, name = m.content, m.name
    if not content and not name:
        return 0
    if roles is None:
        role = count_tokens(m.role, encoding)
    else:
        role = roles.get(m.role)
        if role is None:
            role = roles[m.role] = count_tokens(m.role, encoding)
    counted = count_tokens(content, encoding)
    if contents is not None:
        contents[m.id] = counted
    total = role + counted + 3
    if name:
        total += count_tokens(name, encoding) + 1
    return total


# ---------------------------------------------------------------------------------------------------------- budget


class _Ledger:
    """What is left of the budget, the token count per message id, and what was left out."""

    __slots__ = ("remaining", "encoding", "contents", "tokens", "dropped", "roles")

    def __init__(self, available: int, encoding: str, contents: dict[str, int] | None = None):
        self.remaining = available
        self.encoding = encoding
        self.contents = contents  # message id -> tokens of its content, for a caller that sends the messages
        self.tokens: dict[str, int] = {}
        self.dropped: list[StDropped] = []
        self.roles: dict[str, int] = {}  # each role's count, for this budget only

    def count_all(self, messages: list[StMessage]) -> int:
        """Count every message of the budget at once, before any phase (each phase then reads the counts); their ids
        are unique. Returns the sum."""
        tokens, total = self.tokens, 0
        for m in messages:
            n = tokens[m.id] = _message_tokens(m, self.encoding, self.contents, self.roles)
            total += n
        return total

    def cost(self, messages: Sequence[StMessage]) -> int:
        tokens, total = self.tokens, 0
        for m in messages:  # cost_of, inline: this runs for every group and block
            n = tokens.get(m.id)
            if n is None:
                n = tokens[m.id] = _message_tokens(m, self.encoding, self.contents, self.roles)
            total += n
        return total

    def cost_of(self, m: StMessage) -> int:
        n = self.tokens.get(m.id)
        if n is None:
            n = self.tokens[m.id] = _message_tokens(m, self.encoding, self.contents, self.roles)
        return n

    def fits(self, cost: int) -> bool:
        return self.remaining - cost >= 0

    def drop(self, identifier: str, part: str, reason: str, messages: Sequence[StMessage]) -> None:
        self.dropped.append(StDropped(id=identifier, part=part, reason=reason, tokens=self.cost(messages),
                                      message_ids=tuple(m.id for m in messages),
                                      sources=tuple(s for m in messages for s in m.sources)))

    def failure(self, item: str, cost: int) -> StBudgetFailure:
        return StBudgetFailure(item=item, needed=cost, available=self.remaining)


class _Plan:
    """The budget's inputs and what it keeps, filled by the steps below in SillyTavern's order."""

    __slots__ = ("ledger", "chat", "separator", "continued", "filler", "blocks", "kept", "reserved", "history",
                 "examples", "tail")

    def __init__(self, ledger: _Ledger, *, chat: list[StMessage], separator: StMessage | None,
                 continued: list[StMessage], filler: str, blocks: list[list[StMessage]]):
        self.ledger, self.chat, self.separator, self.continued = ledger, chat, separator, continued
        self.filler, self.blocks = filler, blocks
        self.kept: list[StBudgetGroup] = []
        self.reserved: list[StBudgetGroup] = []
        self.history: list[StMessage] = []
        self.examples: list[StMessage] = []
        self.tail: list[StMessage] = []


def _take_mandatory(plan: _Plan, groups: list[StBudgetGroup]) -> StBudgetFailure | None:
    """The mandatory groups in processing order; the first that does not fit fails and ends the list."""
    ledger = plan.ledger
    tokens, encoding, contents = ledger.tokens, ledger.encoding, ledger.contents
    for index, group in enumerate(groups):
        messages = group.messages
        if len(messages) == 1:  # nearly every group: one prompt (ledger.cost_of, inline)
            m = messages[0]
            cost = tokens.get(m.id)
            if cost is None:
                cost = tokens[m.id] = _message_tokens(m, encoding, contents)
        else:
            cost = ledger.cost(messages)
        if group.reserve:
            ledger.remaining -= cost
            plan.reserved.append(group)
            continue
        if not ledger.fits(cost):
            ledger.drop(group.id, "mandatory", "mandatory_overflow", group.messages)
            for later in groups[index + 1:]:
                ledger.drop(later.id, "reserved" if later.reserve else "mandatory", "not_reached", later.messages)
            return ledger.failure(group.id, cost)
        ledger.remaining -= cost
        plan.kept.append(group)
    return None


def _drop_history_slot(plan: _Plan, reason: str) -> None:
    ledger = plan.ledger
    for m in plan.chat:
        ledger.drop(m.id, "history", reason, [m])
    if plan.separator is not None:
        ledger.drop(plan.separator.id, "new_chat", reason, [plan.separator])
    if plan.continued:
        ledger.drop("continueNudge", "continue", reason, plan.continued)


def _send_if_empty(plan: _Plan) -> list[StMessage]:
    """The send_if_empty user message after a chat that ends with the assistant, paid before the history."""
    ledger, chat = plan.ledger, plan.chat
    if not (plan.filler and chat and chat[-1].role == "assistant"):
        return []
    message = StMessage(id="emptyUserMessageReplacement", role="user", content=plan.filler, kind="send_if_empty",
                        sources=("send_if_empty",))
    cost = ledger.cost([message])
    if not ledger.fits(cost):
        ledger.drop(message.id, "send_if_empty", "over_budget", [message])
        return []
    ledger.remaining -= cost
    return [message]


def _newest_first(plan: _Plan) -> list[StMessage]:
    """The history filled newest first; the first message that does not fit ends it."""
    ledger = plan.ledger
    taken: list[StMessage] = []
    cut = False
    # ledger.cost_of and ledger.fits, inline: this runs once per chat message
    tokens, encoding, remaining, contents = ledger.tokens, ledger.encoding, ledger.remaining, ledger.contents
    for m in reversed(plan.chat):
        cost = tokens.get(m.id)
        if cost is None:
            cost = tokens[m.id] = _message_tokens(m, encoding, contents)
        if cut:
            ledger.drop(m.id, "history", "after_cut", [m])
        elif remaining < cost:
            cut = True
            ledger.drop(m.id, "history", "over_budget", [m])
        elif not m.content:
            ledger.drop(m.id, "history", "empty", [m])
        else:
            remaining -= cost
            taken.append(m)
    ledger.remaining = remaining
    return list(reversed(taken))


def _fill_history(plan: _Plan) -> StBudgetFailure | None:
    """The chatHistory slot, with the separator and the continue collection reserved while the history is filled."""
    ledger, separator, continued = plan.ledger, plan.separator, plan.continued
    separator_cost = ledger.cost([separator]) if separator is not None else 0
    continue_cost = ledger.cost(continued)
    ledger.remaining -= separator_cost + continue_cost
    ending = _send_if_empty(plan)
    plan.history.extend(_newest_first(plan))
    plan.history.extend(ending)
    if separator is not None:
        ledger.remaining += separator_cost
        if not ledger.fits(separator_cost):
            ledger.drop(separator.id, "new_chat", "mandatory_overflow", [separator])
            if continued:
                ledger.drop("continueNudge", "continue", "not_reached", continued)
            return ledger.failure(separator.id, separator_cost)
        ledger.remaining -= separator_cost
        if separator.content:
            plan.history.insert(0, separator)
        else:
            ledger.drop(separator.id, "new_chat", "empty", [separator])
    if continued:
        ledger.remaining += continue_cost
        if not ledger.fits(continue_cost):
            ledger.drop("continueNudge", "continue", "mandatory_overflow", continued)
            return ledger.failure("continueNudge", continue_cost)
        ledger.remaining -= continue_cost
        plan.tail.extend(continued)
    return None


def _fill_examples(plan: _Plan, has_examples_slot: bool) -> None:
    """The example blocks in order until the first that does not fit."""
    ledger = plan.ledger
    cut = False
    for b, block in enumerate(plan.blocks):
        identifier = f"example block {b}"
        cost = ledger.cost(block)
        if not has_examples_slot:
            ledger.drop(identifier, "examples", "no_examples_slot", block)
        elif cut:
            ledger.drop(identifier, "examples", "after_cut", block)
        elif not ledger.fits(cost):
            cut = True
            ledger.drop(identifier, "examples", "over_budget", block)
        else:
            ledger.remaining -= cost
            plan.examples.extend(m for m in block if m.content)
            for m in block:
                if not m.content:
                    ledger.drop(m.id, "examples", "empty", [m])


def _examples_not_reached(plan: _Plan) -> None:
    for b, block in enumerate(plan.blocks):
        plan.ledger.drop(f"example block {b}", "examples", "not_reached", block)


def _history_slot(plan: _Plan, has_history_slot: bool) -> StBudgetFailure | None:
    if not has_history_slot:
        _drop_history_slot(plan, "no_history_slot")
        return None
    return _fill_history(plan)


def _fill_slots(plan: _Plan, *, pin_examples: bool, has_history_slot: bool,
                has_examples_slot: bool) -> StBudgetFailure | None:
    """History then examples, or examples first when pinned (§11.13)."""
    if pin_examples:
        _fill_examples(plan, has_examples_slot)
        return _history_slot(plan, has_history_slot)
    failure = _history_slot(plan, has_history_slot)
    if failure is not None:
        _examples_not_reached(plan)
    else:
        _fill_examples(plan, has_examples_slot)
    return failure


def _place_reserved(plan: _Plan, failure: StBudgetFailure | None) -> StBudgetFailure | None:
    """The reserved groups (control prompts, continue prefill) go last, unless the budget already failed."""
    ledger, reserved = plan.ledger, plan.reserved
    if not reserved:
        return failure
    control = [m for g in reserved for m in g.messages]
    if failure is not None:
        for g in reserved:
            ledger.drop(g.id, "reserved", "not_reached", g.messages)
        return failure
    if not ledger.fits(0):  # freed and added back: fails only when the reservation overdrew the budget
        for g in reserved:
            ledger.drop(g.id, "reserved", "mandatory_overflow", g.messages)
        return ledger.failure("controlPrompts", ledger.cost(control))
    plan.tail.extend(control)
    return None


def st_budget(*, max_context: int, max_tokens: int, mandatory: Sequence[StBudgetGroup] = (),
              history: Sequence[StMessage] = (), new_chat: StMessage | None = None,
              continue_messages: Sequence[StMessage] = (), send_if_empty: str = "",
              examples: Sequence[Sequence[StMessage]] = (), pin_examples: bool = False,
              has_history_slot: bool = True, has_examples_slot: bool = True,
              encoding: str = "o200k_base",
              content_tokens: dict[str, int] | None = None) -> StBudgetResult:
    """SillyTavern's token budget (§6): what fits in max_context - max_tokens, in its processing order.

    3 tokens are reserved for priming. `mandatory` groups are taken in the order given (SillyTavern's processing
    order); a group that does not fit is the failure "Mandatory prompts exceed the context size." and everything
    after it is not reached -- the result then holds the partial prompt, as SillyTavern sends it (§11.12). Reserved
    groups are budgeted where they stand and placed last. Then the chat history (chronological, injections included,
    as `inject_in_chat` returns it) is filled newest first with the new-chat separator and the continue collection
    reserved; the first message that does not fit ends it. The send_if_empty user message comes after the history
    when the newest message is the assistant's and it fits. Then the example blocks (each header and turns, as
    `parse_dialogue_examples` returns them) in order until the first that does not fit. With `pin_examples` the
    examples are filled before the history (§11.13). `content_tokens`, when given, gets the tokens of each
    counted message's content under its id (a caller sending the messages need not count them again).
    """
    limit = max_context - max_tokens
    encoding = checked_encoding(encoding)
    groups = list(mandatory)
    chat, continued = list(history), list(continue_messages)
    blocks = [list(b) for b in examples]
    group_ids = [g.id for g in groups]
    if len(set(group_ids)) != len(group_ids):
        raise step_invalid("mandatory", "group ids used once", group_ids, code="ST_DUPLICATE_ID")
    every = [m for g in groups for m in g.messages] + chat + continued
    if blocks:
        every += [m for b in blocks for m in b]
    if new_chat:
        every.append(new_chat)

    ledger = _Ledger(limit - PRIMING_TOKENS, encoding, content_tokens)
    ledger.count_all(every)
    if len(ledger.tokens) != len(every):  # the table is by id: an id used twice counted once
        unique_ids(every, "messages")  # names the first one and raises
    kept_ids = tuple([g.id for g in groups if not g.reserve])
    plan = _Plan(ledger, chat=chat, separator=new_chat, continued=continued, filler=send_if_empty, blocks=blocks)
    failure = _take_mandatory(plan, groups)
    if failure is not None:
        _drop_history_slot(plan, "not_reached")
        _examples_not_reached(plan)
    else:
        failure = _fill_slots(plan, pin_examples=pin_examples, has_history_slot=has_history_slot,
                              has_examples_slot=has_examples_slot)
    failure = _place_reserved(plan, failure)
    return StBudgetResult(
        limit=limit, remaining=ledger.remaining, groups=tuple(plan.kept),
        group_ids=kept_ids, history=tuple(plan.history),
        examples=tuple(plan.examples), tail=tuple(plan.tail), dropped=tuple(ledger.dropped), tokens=ledger.tokens,
        failure=failure,
    )
