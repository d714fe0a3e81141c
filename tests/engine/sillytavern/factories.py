"""Small builders of the SillyTavern step models for tests (the steps take typed models only)."""

from __future__ import annotations

from assembly.sillytavern.budget import StBudgetResult
from assembly.sillytavern.messages import MainAttachment, StInjection, StMessage

ROLES_BY_LETTER = {"u": "user", "a": "assistant", "s": "system"}


def message(id: str, role: str, content: str = "", **fields) -> StMessage:
    """A chat message (kind "chat", holding itself) unless `kind` says otherwise."""
    kind = fields.pop("kind", "chat")
    sources = fields.pop("sources", (id,) if kind == "chat" else ())
    return StMessage(id=id, role=role, content=content, kind=kind, sources=sources, **fields)


def make_chat(spec: str) -> list[StMessage]:
    """"ua" -> M1 user, M2 assistant; ids m1, m2; content "M1", "M2"."""
    return [message(f"m{i}", ROLES_BY_LETTER[c], f"M{i}") for i, c in enumerate(spec, 1)]


def pm(name: str, role: str, depth: int | None, order: int = 100, *, source: str | None = None,
       content: str | None = None) -> StInjection:
    """A Prompt Manager in-chat prompt whose content is its name."""
    return StInjection(sources=(source or name,), content=name if content is None else content, role=role,
                       depth=depth, order=order)


def ext(name: str, key: str, role: str, depth: int | None, content: str | None = None) -> StInjection:
    """An extension prompt's injection (order 100, sorted by key)."""
    return StInjection(sources=(name,), key=key, content=content or name, role=role, depth=depth)


def attachment(key: str, position: str, content: str | None = None, role: str = "system") -> MainAttachment:
    return MainAttachment(sources=(key,), key=key, content=content or key, position=position, role=role)


def compose(slot_order: list[str], budget: StBudgetResult) -> list[StMessage]:
    """The request a budget lays out: the slots in order (chatHistory, dialogueExamples, else a kept group), then
    the tail. A test helper: the product's request is `request.st_request`."""
    kept = {g.id: g for g in budget.groups}
    out: list[StMessage] = []
    for slot in slot_order:
        if slot == "chatHistory":
            out.extend(budget.history)
        elif slot == "dialogueExamples":
            out.extend(budget.examples)
        elif slot in kept:
            out.extend(kept[slot].messages)
    out.extend(budget.tail)
    return out


def sent(messages: list[StMessage]) -> list[StMessage]:
    """SillyTavern never sends an empty message."""
    return [m for m in messages if m.content]
