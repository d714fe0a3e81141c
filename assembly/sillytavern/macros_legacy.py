"""SillyTavern 1.18's legacy macro engine (`macros.js` `evaluateMacros`, `substituteParams`), one text at a time.

The legacy engine runs a fixed list of patterns over the text, each over the whole text once, in this order:
the `<USER>`-style tokens, dice, the variable family, `{{newline}}`, `{{trim}}`, `{{noop}}`, `{{input}}`; then one
pattern per environment value (`{{original}}`, the card fields, `{{user}}`, `{{char}}`, `{{group}}`, ...); then the
chat, text and time macros, `{{outlet::}}`, `{{random}}` and `{{pick}}`. A pattern sees what the earlier ones left
(so `{{setvar::x::{{user}}}}` stores `{{user` and leaves `}}`), never its own output; the list stops as soon as no
`{{` is left. Random choices are the first choice and dice the middle face: a preview never changes between runs.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from assembly.macros import dice_total, holds_macro
from assembly.sillytavern.js_numbers import js_string
from assembly.sillytavern.macro_clock import legacy_patterns
from assembly.sillytavern.relative_time import time_diff

if TYPE_CHECKING:
    from assembly.sillytavern.macro_environment import MacroEnvironment

_I = re.IGNORECASE
Replace = Callable[[re.Match[str]], Any]
Step = Callable[[str], str]


def _pattern(source: str, flags: int = _I) -> re.Pattern[str]:
    """`source` compiled at its first use (re keeps it after that): a step's pattern runs only where the text holds
    its key (most requests run none), and compiling every one took about 3 ms of a fresh process's first request."""
    return re.compile(source, flags)


_LINE_END = "[\n\r\u2028\u2029]"  # what JavaScript's "." does not match

# compiled now, as `_NAMED` and `_TRIM` are: they run on most requests (a text with "<"; the story string's {{trim}})
_TOKENS = (
    (re.compile(r"<USER>", _I), "user"),
    (re.compile(r"<BOT>", _I), "char"),
    (re.compile(r"<CHAR>", _I), "char"),
    (re.compile(r"<CHARIFNOTGROUP>", _I), "group"),
    (re.compile(r"<GROUP>", _I), "group"),
)
_ANY_TOKEN = re.compile(r"<(?:USER|BOT|CHAR|CHARIFNOTGROUP|GROUP)>", _I)  # a text without one skips them all
_ROLL = r"\{\{roll[ :]([^}]++)\}\}"
_DICE = r"^(\d*)d(\d+)\s*([+-]\s*\d+)?$"
_SETVAR = r"\{\{setvar::([^:]++)::([^}]*+)\}\}"
_ADDVAR = r"\{\{addvar::([^:]++)::([^}]++)\}\}"
_INCVAR = r"\{\{incvar::([^}]++)\}\}"
_DECVAR = r"\{\{decvar::([^}]++)\}\}"
_GETVAR = r"\{\{getvar::([^}]++)\}\}"
_SETGLOBAL = r"\{\{setglobalvar::([^:]++)::([^}]*+)\}\}"
_ADDGLOBAL = r"\{\{addglobalvar::([^:]++)::([^}]++)\}\}"
_INCGLOBAL = r"\{\{incglobalvar::([^}]++)\}\}"
_DECGLOBAL = r"\{\{decglobalvar::([^}]++)\}\}"
_GETGLOBAL = r"\{\{getglobalvar::([^}]++)\}\}"
_NEWLINE = r"\{\{newline\}\}"
_TRIM = re.compile(r"\{\{trim\}\}", _I)
_NOOP = r"\{\{noop\}\}"
_INPUT = r"\{\{input\}\}"

_MAX_PROMPT = r"\{\{maxPrompt\}\}"
_LAST_MESSAGE = r"\{\{lastMessage\}\}"
_LAST_MESSAGE_ID = r"\{\{lastMessageId\}\}"
_LAST_USER = r"\{\{lastUserMessage\}\}"
_LAST_CHAR = r"\{\{lastCharMessage\}\}"
_FIRST_INCLUDED = r"\{\{firstIncludedMessageId\}\}"
_REVERSE = r"\{\{reverse:"
_COMMENT = r"\{\{//"
_OUTLET = r"\{\{outlet::"
_RANDOM = r"\{\{random\s?::?([^}]++)\}\}"
_PICK = r"\{\{pick\s?::?([^}]++)\}\}"
_BANNED = r"\{\{banned \"(.*)\"\}\}"
_TIME_DIFF = r"\{\{timeDiff::(.*?)::(.*?)\}\}"
# `{{name}}` of every environment value `_environment` and SillyTavern's modules give, compiled once
_NAMED = {name: re.compile("\\{\\{" + re.escape(name) + "\\}\\}", _I) for name in (
    "original", "charPrompt", "charJailbreak", "charInstruction", "description", "personality", "scenario", "persona",
    "mesExamples", "mesExamplesRaw", "charVersion", "char_version", "charDepthPrompt", "creatorNotes", "user", "char",
    "group", "charIfNotGroup", "groupNotMuted", "model", "maxContext", "maxResponse", "maxPromptTokens",
    "lastGenerationType", "allChatRange", "notChar", "authorsNote", "charAuthorsNote", "defaultAuthorsNote",
    "lastChatMessage")}


@dataclass
class LegacyCall:
    """One `substituteParams` call: the environment, `{{original}}` (filled once) and whether card fields apply."""

    env: MacroEnvironment
    original: str | None = None
    card_fields: bool = True
    extra: dict[str, Callable[[], Any]] = field(default_factory=dict)
    fields: Any = None  # the card fields as this call read them (`_environment`)
    original_used: bool = False


def _roll(match: re.Match[str]) -> str:
    return roll(match.group(1))


def roll(formula: str) -> str:
    """A dice formula's total as the preview shows it: every die its middle face ('' for a formula it cannot read)."""
    formula = formula.strip()
    if formula.isdigit():
        formula = f"1d{formula}"
    dice = _pattern(_DICE).match(formula)
    if dice is None:
        return ""
    return dice_total(dice.group(1) or "1", dice.group(2), (dice.group(3) or "0").replace(" ", "")) or ""


def _choices(raw: str) -> list[str]:
    return [c.strip() for c in (raw.split("::") if "::" in raw else raw.replace("\\,", "\0").split(","))]


def _first_choice(match: re.Match[str]) -> str:
    choices = _choices(match.group(1))
    return choices[0].replace("\0", ",") if choices else ""


def _pre_env(call: LegacyCall) -> list[Step]:
    env, variables = call.env, call.env.variables

    def var(fn: Callable[..., Any], is_global: bool, returns: bool) -> Replace:
        def replace(match: re.Match[str]) -> Any:
            env.touched = True
            value = fn(*(g if i else g.strip() for i, g in enumerate(match.groups())), is_global=is_global)
            return value if returns else ""
        return replace

    return [_sub(pattern, replace) for pattern, replace in (
        (_ROLL, _roll),
        (_SETVAR, var(variables.set, False, False)),
        (_ADDVAR, var(variables.add, False, False)),
        (_INCVAR, var(lambda n, is_global: variables.add(n, "1", is_global=is_global), False, True)),
        (_DECVAR, var(lambda n, is_global: variables.add(n, "-1", is_global=is_global), False, True)),
        (_GETVAR, var(variables.get, False, True)),
        (_SETGLOBAL, var(variables.set, True, False)),
        (_ADDGLOBAL, var(variables.add, True, False)),
        (_INCGLOBAL, var(lambda n, is_global: variables.add(n, "1", is_global=is_global), True, True)),
        (_DECGLOBAL, var(lambda n, is_global: variables.add(n, "-1", is_global=is_global), True, True)),
        (_GETGLOBAL, var(variables.get, True, True)),
        (_NEWLINE, lambda _m: "\n"),
    )] + [_trimmed] + [_sub(pattern, replace) for pattern, replace in (
        (_NOOP, lambda _m: ""),
        (_INPUT, lambda _m: env.send_box),
    )]


# `substituteParams`' environment, in its order: `original`, the card fields (name, field), the names (name,
# attribute of the environment), then the call's extras and the names SillyTavern's modules registered.
_CARD_VALUES = (("charPrompt", "system"), ("charJailbreak", "jailbreak"), ("charInstruction", "jailbreak"),
                ("description", "description"), ("personality", "personality"), ("scenario", "scenario"),
                ("persona", "persona"), ("mesExamples", "mesExamples"), ("mesExamplesRaw", "mesExamplesRaw"),
                ("charVersion", "version"), ("char_version", "version"), ("charDepthPrompt", "charDepthPrompt"),
                ("creatorNotes", "creatorNotes"))
_ENV_VALUES = (("user", "user"), ("char", "char"), ("group", "group"), ("charIfNotGroup", "group"),
               ("groupNotMuted", "group"), ("model", "model"))
_CARD_FIELD_OF, _ENV_ATTRIBUTE_OF = dict(_CARD_VALUES), dict(_ENV_VALUES)


def _environment(call: LegacyCall) -> tuple[tuple[str, ...], tuple[str | None, ...]]:
    """The environment's names in its order (its values come from `_value`), with each name's key (None: a name
    whose pattern always runs). Reading it reads the card fields, as building it does in SillyTavern (their variable
    macros run first)."""
    env = call.env
    if call.card_fields:
        call.fields = env.card_fields()
    shape = (call.original is not None, call.card_fields, tuple(call.extra), tuple(env.registered))
    kept = env.legacy_names.get(shape)  # the same for every call of this generation with this shape
    if kept is None:
        names = [*(("original",) if call.original is not None else ()),
                 *(name for name, _ in _CARD_VALUES if call.card_fields), *_ENV_ATTRIBUTE_OF]
        known = set(names)
        names += [name for name in (*call.extra, *env.registered) if name not in known and not known.add(name)]
        kept = env.legacy_names[shape] = (tuple(names), tuple(map(_NAMED_LOWERED.get, names)))
    return kept


def _value(call: LegacyCall, name: str) -> Any:
    """The environment's value of `name`: an extra first, then `original` (filled once), a card field or a name,
    then what a module registered."""
    if name in call.extra:
        return call.extra[name]()
    if name == "original" and call.original is not None:
        if call.original_used:
            return ""
        call.original_used = True
        return call.original
    field_name = _CARD_FIELD_OF.get(name)
    if field_name is not None and call.fields is not None:
        return call.fields.get(field_name)
    attribute = _ENV_ATTRIBUTE_OF.get(name)
    if attribute is not None:
        return getattr(call.env, attribute)
    return call.env.registered[name](call.env)


def _post_env(call: LegacyCall) -> list[Step]:
    env = call.env
    return [_sub(pattern, replace) for pattern, replace in (
        (_MAX_PROMPT, lambda _m: js_string(env.max_prompt)),
        (_LAST_MESSAGE, lambda _m: env.chat_value("lastMessage")),
        (_LAST_MESSAGE_ID, lambda _m: env.chat_value("lastMessageId")),
        (_LAST_USER, lambda _m: env.chat_value("lastUserMessage")),
        (_LAST_CHAR, lambda _m: env.chat_value("lastCharMessage")),
        (_FIRST_INCLUDED, lambda _m: env.chat_value("firstIncludedMessageId")),
    )] + [
        lambda text: _lazy_sub(text, _REVERSE, lambda inner: inner[::-1], one_line=True),
        lambda text: _lazy_sub(text, _COMMENT, lambda _inner: "", one_line=False),
        *[_sub(pattern, replace) for pattern, replace in legacy_patterns(env.clock)],  # time macros (a clock)
        _sub(_TIME_DIFF, lambda m: time_diff(m.group(1), m.group(2))),
        lambda text: _lazy_sub(text, _OUTLET, env.outlet, one_line=True),
    ] + [_sub(pattern, replace) for pattern, replace in (
        (_RANDOM, _first_choice),
        (_PICK, _first_choice),
        (_BANNED, lambda _m: ""),
    )]


def _sub(source: str, replace: Replace) -> Step:
    return lambda text: _pattern(source).sub(lambda m: js_string(replace(m)), text)


def _lazy_sub(text: str, opener_source: str, replace: Callable[[str], Any], *, one_line: bool) -> str:
    """`text.replace(/<opener>(.+?)}}/g, ...)` (or `([\\s\\S]*?)` when not `one_line`) without a scan to the end of the
    text from every opening: each opening takes the first "}}" after it, unless a line ends before it."""
    opener, line_ends = _pattern(opener_source), _pattern(_LINE_END, 0)
    out: list[str] = []
    pos = i = 0
    least = 1 if one_line else 0
    close = line_end = -1  # the first "}}" / line end found at or after the last search (reused while ahead)
    while True:
        match = opener.search(text, i)
        if match is None:
            break
        body = match.end()
        if close < body + least:
            close = text.find("}}", body + least)
            if close < 0:
                break  # no later opening closes either
        if one_line:
            if line_end < body:
                found = line_ends.search(text, body)
                line_end = found.start() if found else len(text)
            if line_end < close:
                i = line_end + 1  # no opening before that line end can close on its line
                continue
        out.append(text[pos:match.start()])
        out.append(js_string(replace(text[match.end():close])))
        pos = i = close + 2
    out.append(text[pos:])
    return "".join(out)


def _strip_newlines(text: str, *, end: bool) -> str:
    """The run of newlines (`\n` or `\r\n`) at one end of `text` removed, as `(?:\r?\n)*` takes it."""
    while True:
        if end and text.endswith("\n"):
            text = text[:-2] if text.endswith("\r\n") else text[:-1]
        elif not end and text.startswith(("\n", "\r\n")):
            text = text[1:] if text.startswith("\n") else text[2:]
        else:
            return text


def _trimmed(text: str) -> str:
    """`/(?:\r?\n)*{{trim}}(?:\r?\n)*/gi` -> '': each {{trim}} with the newlines around it (split, then stripped:
    no pattern rescans a run of newlines)."""
    pieces = _TRIM.split(text)
    if len(pieces) == 1:
        return text
    last = len(pieces) - 1
    return "".join(_strip_newlines(_strip_newlines(p, end=False) if i else p, end=True) if i < last
                   else _strip_newlines(p, end=False) for i, p in enumerate(pieces))


def _sanitized(value: Any) -> str:
    """MacrosParser.sanitizeMacroValue: text as it is, nothing as '', other values as JavaScript writes them."""
    if value is None:
        return ""
    return value if isinstance(value, str) else js_string(value)


def _named(name: str) -> re.Pattern[str]:
    """The pattern of `{{name}}`, any case."""
    pattern = _NAMED.get(name)
    return pattern if pattern is not None else re.compile("\\{\\{" + re.escape(name) + "\\}\\}", _I)


# One search finds which steps can match (any case, as their patterns): the word after each `{{` (`_OPENED_WORD`),
# read as the keys of the steps before the environment and the names of the environment (a step whose key the text
# lacks is passed over; one whose key it holds may still match nothing), then after it the group's openers
# (`_POST_OPENER`: a text without one skips the group). A group with another number of steps than these cover (a macro
# added) runs step by step (`_PRE_COVERED`, `_POST_COVERED`).
_PRE_STEPS = 15
# each step's key, in `_pre_env`'s order
_PRE_KEYS = ("roll", "setvar", "addvar", "incvar", "decvar", "getvar", "setglobalvar", "addglobalvar", "incglobalvar",
             "decglobalvar", "getglobalvar", "newline", "trim", "noop", "input")
_PRE_KEY_SET = frozenset(_PRE_KEYS)
# a step's pattern opens with `{{` and its whole key or name (what folds to ASCII letters is a word character too);
# this plain pattern walks a text faster than the steps' alternations do while folding case
_OPENED_WORD = re.compile(r"\{\{(\w+)")
_POST_OPENER = re.compile(r"\{\{(?:maxPrompt\}\}|lastMessage|lastUserMessage\}\}|lastCharMessage\}\}|"
                          r"firstIncludedMessageId\}\}|reverse:|//|timeDiff::|outlet::|random|pick|banned \"|"
                          r"(?:time|date|weekday|isotime|isodate|idle_duration)\}\}|datetimeformat |time_UTC)", _I)
_POST_STEPS = 21  # with a clock (its time macros); without one the group is a part of these
_PRE_COVERED = _POST_COVERED = False  # set below, once the steps are defined
_NAMED_LOWERED = {name: name.lower() for name in _NAMED}
_NAMED_LOWER = frozenset(_NAMED_LOWERED.values())


def evaluate_legacy(content: str, call: LegacyCall) -> str:
    """`content` through `evaluateMacros` with this call's environment."""
    if not content:
        return ""
    for pattern, name in _TOKENS if "<" in content and _ANY_TOKEN.search(content) else ():
        if "<" not in content:
            break
        content = pattern.sub(lambda _m, name=name: getattr(call.env, name), content)
    if not holds_macro(content):
        if call.card_fields:
            call.env.card_fields()  # substituteParams builds its environment (the card fields) before any macro
        return content
    # before any step runs: it reads the card fields (their variable macros run first)
    named, named_keys = _environment(call)
    words = _OPENED_WORD.findall(content)
    keys = _known_words(words, _PRE_KEY_SET) if _PRE_COVERED else None
    if keys != set():  # else no step of the group can match: each would leave the text as it is
        steps = _pre_env(call)
        changed = _steps_present(content, keys, _PRE_KEYS, lambda index, text: steps[index](text), _pre_keys_in)
        if not changed or not holds_macro(changed):
            return changed
        if changed is not content:
            content, words = changed, _OPENED_WORD.findall(changed)
    content = _steps_present(content, _known_words(words, _NAMED_LOWER), named_keys,
                             lambda index, text: _named(named[index]).sub(
                                 lambda _m: js_string(_sanitized(_value(call, named[index]))), text), _names_in)
    if not content or not holds_macro(content) or (_POST_COVERED and _POST_OPENER.search(content) is None):
        return content
    for step in _post_env(call):
        changed = step(content)
        if changed is not content:  # a pattern that matched nothing hands the same text back
            content = changed
            if not content or not holds_macro(content):
                return content
    return content


def _steps_present(content: str, present: set[str] | None, keys: Iterable[str | None],
                   apply: Callable[[int, str], str], keys_in: Callable[[str], set[str] | None]) -> str:
    """A group's steps in their order (`apply(index, text)`), each over the whole text as it stands. A step whose
    key the text does not hold (`present`, found again by `keys_in` whenever a step changed the text, as a value may
    bring macros of later steps; None when it cannot tell) is passed over: its pattern would leave the text as it
    is. A step without a key always runs. Stops where no `{{` is left."""
    for index, key in enumerate(keys):
        if present is not None and key is not None and key not in present:
            continue
        changed = apply(index, content)
        if changed is not content:  # a pattern that matched nothing hands the same text back
            if not changed or not holds_macro(changed):
                return changed
            content, present = changed, keys_in(changed)
    return content


def _pre_keys_in(text: str) -> set[str] | None:
    """The keys of the steps before the environment whose opening `text` holds, lowercased (None: every step
    runs)."""
    return _known_words(_OPENED_WORD.findall(text), _PRE_KEY_SET) if _PRE_COVERED else None


def _names_in(text: str) -> set[str] | None:
    """The known names whose `{{name` `text` holds, lowercased (None: every name's pattern runs)."""
    return _known_words(_OPENED_WORD.findall(text), _NAMED_LOWER)


def _known_words(words: list[str], known: frozenset[str]) -> set[str] | None:
    """The `known` words among `words`, lowercased; None for a word beyond ASCII, which may fold to a known one in a
    way lowercasing does not."""
    found = set()
    for word in words:
        if not word.isascii():
            return None
        lowered = word.lower()
        if lowered in known:
            found.add(lowered)
    return found


def _covered() -> tuple[bool, bool]:
    """Whether the openers cover every step of the groups before and after the environment (counted once, with what
    making the steps reads of an environment: the macro environment imports this module)."""
    from datetime import UTC, datetime
    from types import SimpleNamespace

    from assembly.sillytavern.macro_clock import MacroClock
    from assembly.sillytavern.macro_variables import MacroVariables

    environment = SimpleNamespace(variables=MacroVariables(), outlet=None,
                                  clock=MacroClock(now=datetime(2000, 1, 1, tzinfo=UTC)))
    probe = LegacyCall(environment)  # type: ignore[arg-type]
    return len(_pre_env(probe)) == _PRE_STEPS, len(_post_env(probe)) == _POST_STEPS


_PRE_COVERED, _POST_COVERED = _covered()
