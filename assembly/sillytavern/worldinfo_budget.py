"""SillyTavern's world info budget (sillytavern.md §7.4, §13.2): how much of the context the activated entries may
take, what the chat-completion counter charges their text, and the check a scan pass makes at each entry."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from assembly.sillytavern.models import WorldBook
from assembly.sillytavern.text_budget import ST_ESTIMATE, estimate_bytes, estimate_tokens
from assembly.tokens import count_tokens, counted_after_newline, token_ceiling, tokens_after_newline


def _round_half_up(value: float) -> int:
    # JavaScript's Math.round (halves go up), unlike Python's round (halves go to even).
    return math.floor(value + 0.5)


def world_info_tokens(text: str, encoding: str) -> int:
    """What SillyTavern's chat-completion counter charges a world info text: one system message counted in full,
    so the tokens of "system" and of the text, 3 for the message, 3 for the reply priming, less the 1 the client
    takes off (the partial count's other -2 is not taken; sillytavern.md §6, §13.2). An empty text costs nothing."""
    if not text:
        return 0
    if encoding == ST_ESTIMATE:  # text completion counts the text alone, with SillyTavern's estimate
        return estimate_tokens(text)
    return _as_system_message(count_tokens(text, encoding), encoding)


def _as_system_message(text_tokens: int, encoding: str) -> int:
    return count_tokens("system", encoding) + text_tokens + 3 + 3 - 1


@dataclass
class PassBudget:
    """One pass's budget check, as SillyTavern makes it at each entry: the text activated before the pass and the
    pass's new text so far, each counted as world info, against the budget. Neither grows a count at each entry: a
    ceiling that needs no tokenizing answers while it stays under the budget; past it the new text is counted once,
    and then each entry's text alone, as it adds to a text that ends with a newline (`tokens_after_newline`)."""

    before: str
    encoding: str
    budget: int
    # a text an earlier pass counted, and its own tokens: this pass's `before` grew from it by lines put before it
    earlier: tuple[str, int] | None = None
    new: list[str] = field(default_factory=list)  # the new text's pieces, each an entry's content and a newline
    new_chars: int = 0
    new_bytes: int = 0  # what SillyTavern's estimate counts (text completion)
    before_ceiling: int | None = None
    new_ceiling: int | None = 0  # at most the new text's own tokens: the sum of its pieces' ceilings
    before_tokens: int | None = None  # counted when a ceiling first cannot answer
    before_text_tokens: int | None = None  # `before`'s own tokens, when counted (the next pass's `earlier`)
    new_tokens: int | None = None  # the new text's own tokens, exactly, once a ceiling could not answer

    def __post_init__(self) -> None:
        ceiling = token_ceiling(self.before, self.encoding)
        self.before_ceiling = 0 if not self.before else None if ceiling is None else _as_system_message(
            ceiling, self.encoding)

    def add(self, content: str) -> None:
        piece = content + "\n"
        if self.new_tokens is not None:
            added = tokens_after_newline(piece, self.encoding, preceding_chars=self.new_chars)
            self.new_tokens = None if added is None else self.new_tokens + added
        if self.new_ceiling is not None:
            ceiling = token_ceiling(piece, self.encoding)
            self.new_ceiling = None if ceiling is None else self.new_ceiling + ceiling
        self.new.append(piece)
        self.new_chars += len(piece)
        if self.encoding == ST_ESTIMATE:
            self.new_bytes += len(piece.encode("utf-8"))

    def reached(self) -> int | None:
        """The tokens once they reach the budget (the count SillyTavern reports), else None."""
        if not self.new:
            new_ceiling: int | None = 0
        else:
            new_ceiling = None if self.new_ceiling is None else _as_system_message(self.new_ceiling, self.encoding)
        if self.before_ceiling is not None and new_ceiling is not None and (
                self.before_ceiling + new_ceiling < self.budget):
            return None
        if self.before_tokens is None:
            self.before_tokens = self._before_tokens()
        tokens = self.before_tokens + self._new_tokens()
        return tokens if tokens >= self.budget else None

    def _before_tokens(self) -> int:
        """`world_info_tokens` of the text activated before the pass: the lines this pass's recursion put before an
        earlier pass's counted text are counted, that text's count is taken (`counted_after_newline`)."""
        if not self.before or self.encoding == ST_ESTIMATE:
            return world_info_tokens(self.before, self.encoding)
        text_tokens = None
        if self.earlier is not None:
            earlier, earlier_tokens = self.earlier
            head = self.before[:len(self.before) - len(earlier)]
            if earlier and head.endswith("\n") and self.before.endswith(earlier):
                after = counted_after_newline(earlier, earlier_tokens, self.encoding, preceding_chars=len(head))
                text_tokens = None if after is None else count_tokens(head, self.encoding) + after
        if text_tokens is None:
            text_tokens = count_tokens(self.before, self.encoding)
        self.before_text_tokens = text_tokens
        return _as_system_message(text_tokens, self.encoding)

    def _new_tokens(self) -> int:
        """`world_info_tokens` of the new text, from what was kept of it (counted whole only when nothing was)."""
        if not self.new:
            return 0
        if self.encoding == ST_ESTIMATE:
            return estimate_bytes(self.new_bytes)
        if self.new_tokens is None:
            self.new_tokens = count_tokens("".join(self.new), self.encoding)
        return _as_system_message(self.new_tokens, self.encoding)


def world_info_budget(book: WorldBook, max_context: int) -> int:
    """SillyTavern's budget: round(max_context * budget_percent / 100) or 1, capped by budget_cap when > 0."""
    try:
        limit = _round_half_up(book.budget_percent * max_context / 100) or 1
    except OverflowError:
        # past a double's range: JavaScript's Infinity budget never binds, nor does the exact integer share here
        limit = (2 * book.budget_percent * max_context + 100) // 200 or 1
    if book.budget_cap > 0 and limit > book.budget_cap:
        limit = book.budget_cap
    return limit
