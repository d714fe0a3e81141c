"""SillyTavern's regex scripts (its regex extension, sillytavern.md §13.1): which scripts run on a text, and what
one script does to it.

Scripts come from three lists, applied in this order: the global ones (`resources.regex_scripts`), the preset's
`extensions.regex_scripts`, the card's `data.extensions.regex_scripts`. A script whose find SillyTavern could not
compile does nothing; `invalid_finds` names them so the preview can say so.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from assembly.macros import MacroContext, expand_text_macros
from assembly.reading import ImportInvalid
from assembly.sillytavern.models import RegexScript
from assembly.sillytavern.regex_changes import RegexStep

if TYPE_CHECKING:
    from assembly.sillytavern.js_regex import JsRegex, Uncompilable
    from assembly.sillytavern.pattern_matcher import PatternRuns

USER_INPUT, AI_OUTPUT, SLASH_COMMAND, WORLD_INFO, REASONING = 1, 2, 3, 5, 6
_FIELDS = {"scriptName": "script_name", "findRegex": "find_regex", "replaceString": "replace_string",
           "trimStrings": "trim_strings", "placement": "placement", "disabled": "disabled",
           "markdownOnly": "markdown_only", "promptOnly": "prompt_only", "runOnEdit": "run_on_edit",
           "substituteRegex": "substitute_regex", "minDepth": "min_depth", "maxDepth": "max_depth"}
_GROUP_REFERENCE = re.compile(r"\$(\d+)|\$<([^>]+)>")
_MATCH_MACRO = re.compile(r"\{\{match\}\}", re.IGNORECASE)
_REGEX_SPECIALS = re.compile(r"[.*+?^${}()|[\]\\]")


def parse_regex_scripts(value: Any, path: str) -> tuple[RegexScript, ...]:
    """A list of SillyTavern regex script objects (as its regex extension exports them)."""
    if isinstance(value, dict):
        value = [value]  # one exported script file
    if not isinstance(value, (list, tuple)):
        raise ImportInvalid(path, "a list of regex script objects")
    scripts = []
    for index, item in enumerate(value):
        if isinstance(item, RegexScript):
            scripts.append(item)
            continue
        if not isinstance(item, dict):
            raise ImportInvalid(f"{path}[{index}]", "a regex script object")
        fields: dict[str, Any] = {"other_fields": {k: v for k, v in item.items() if k not in _FIELDS}}
        for key, name in _FIELDS.items():
            if key in item and item[key] is not None:
                fields[name] = item[key]
        try:
            scripts.append(RegexScript.model_validate(fields))
        except ValueError:
            raise ImportInvalid(f"{path}[{index}]", "a regex script object (scriptName, findRegex, "
                                "replaceString, trimStrings, placement, ...)") from None
    return tuple(scripts)


def scripts_in_order(resources: Any) -> tuple[RegexScript, ...]:
    """Global, then preset, then card scripts (§13.1)."""
    out = list(getattr(resources, "regex_scripts", ()) or ())
    preset, character = resources.preset, resources.character
    for where, owner in (("preset.extensions.regex_scripts", preset and preset.other_fields.get("extensions")),
                         ("character.extensions.regex_scripts", character and character.extensions)):
        raw = owner.get("regex_scripts") if isinstance(owner, dict) else None
        if raw:
            try:
                out.extend(parse_regex_scripts(raw, where))
            except ImportInvalid:
                continue  # a resource file's own scripts that do not read are passed over, as SillyTavern does
    return tuple(out)


def _find(script: RegexScript, macros: MacroContext, runs: PatternRuns | None = None) -> JsRegex | None:
    """The script's find compiled, or None: SillyTavern could not compile it, or (reported to `runs`) it is over
    the size limits."""
    from assembly.sillytavern.js_regex import Uncompilable  # with the first script (see _new_runs)

    regex = _compiled_find(script, macros, runs.limits if runs is not None else None)
    if isinstance(regex, Uncompilable):
        if regex.kind == "limit" and runs is not None:
            runs.refuse(_owner(script), regex.source, "size", regex.reason)
        return None
    return regex


def _owner(script: RegexScript) -> str:
    return f"regex script {script.script_name!r}"


def _new_runs() -> PatternRuns:
    # The pattern machinery (JavaScript regex translation, limits) loads with the first script run: a request
    # without regex scripts never loads it.
    from assembly.sillytavern.pattern_matcher import PatternRuns

    return PatternRuns()


def _compiled_find(script: RegexScript, macros: MacroContext, limits: Any) -> JsRegex | Uncompilable:
    from assembly.sillytavern.pattern_matcher import find_limited  # with the first script (see _new_runs)

    find = script.find_regex
    if script.substitute_regex == 1:
        find = expand_text_macros(find, macros).text
    elif script.substitute_regex == 2:
        escaped = MacroContext(user=_escape(macros.user), char=_escape(macros.char))
        find = expand_text_macros(find, escaped).text
    return find_limited(find, limits) if limits is not None else find_limited(find)


def _escape(text: str) -> str:
    return _REGEX_SPECIALS.sub(lambda m: "\\" + m.group(0), text)


def run_regex_script(script: RegexScript, text: str, macros: MacroContext, runs: PatternRuns | None = None) -> str:
    """One script on one text: every match (the first without g) becomes the replacement, with {{match}}, $N and
    $<name> filled (each group value without the trim strings) and then the macros substituted. Over a limit of
    `runs` (a fresh one by default) the text is left as it was."""
    if script.disabled or not script.find_regex or not text:
        return text
    runs = runs if runs is not None else _new_runs()
    regex = _find(script, macros, runs)
    if regex is None:
        return text
    trims = [expand_text_macros(t, macros).text for t in script.trim_strings]
    template = _MATCH_MACRO.sub("$0", script.replace_string)

    def group_value(found: Any, number: str | None, name: str | None) -> str:
        value = regex.group(found, int(number) if number is not None else name)  # None: no such group
        if not value:
            return ""
        for trim in trims:
            if trim:
                value = value.replace(trim, "")
        return value

    def replace(found: Any) -> str:
        filled = _GROUP_REFERENCE.sub(lambda g: group_value(found, g.group(1), g.group(2)), template)
        return expand_text_macros(filled, macros).text

    limit = len(text) + runs.limits.output_length  # a script may add at most output_length characters
    result = runs.run(_owner(script), regex,
                      lambda deadline: regex.replace_each(text, replace, deadline=deadline, max_output=limit))
    return text if result is None else result


def regexed(text: str, placement: int, scripts: Sequence[RegexScript], macros: MacroContext, *,
            is_prompt: bool = False, depth: int | None = None, runs: PatternRuns | None = None) -> str:
    """SillyTavern's `getRegexedString`: the scripts this call runs, in order, each on the previous one's output.
    A prompt call runs the prompt-only scripts; an unmarked call those with neither prompt-only nor markdown-only.
    With a depth, a script is skipped below its minDepth (a number >= -1) or above its maxDepth (>= 0)."""
    return regexed_steps(text, placement, scripts, macros, is_prompt=is_prompt, depth=depth, runs=runs)[0]


def regexed_steps(text: str, placement: int, scripts: Sequence[RegexScript], macros: MacroContext, *,
                  is_prompt: bool = False, depth: int | None = None,
                  runs: PatternRuns | None = None) -> tuple[str, list[RegexStep]]:
    """`regexed`, and each script that changed the text with the text before and after it (for the preview)."""
    steps: list[RegexStep] = []
    if not text or not scripts:
        return text, steps
    runs = runs if runs is not None else _new_runs()
    for script in scripts:
        if is_prompt:
            if not script.prompt_only:
                continue
        elif script.prompt_only or script.markdown_only:
            continue
        if depth is not None:
            if script.min_depth is not None and script.min_depth >= -1 and depth < script.min_depth:
                continue
            if script.max_depth is not None and script.max_depth >= 0 and depth > script.max_depth:
                continue
        if placement in script.placement:
            after = run_regex_script(script, text, macros, runs)
            if after != text:
                steps.append(RegexStep(script=script.script_name, before=text, after=after))
            text = after
    return text, steps


def invalid_finds(scripts: Sequence[RegexScript], macros: MacroContext) -> list[dict[str, Any]]:
    """The enabled scripts whose find SillyTavern could not compile: they change nothing. (A find over the size
    limits is reported by the run, as ST_PATTERN_LIMIT.)"""
    from assembly.sillytavern.js_regex import Uncompilable  # with the first script (see _new_runs)

    out = []
    for script in scripts:
        if script.disabled or not script.find_regex:
            continue
        regex = _compiled_find(script, macros, None)
        if isinstance(regex, Uncompilable) and regex.kind != "limit":
            out.append({"code": "ST_REGEX_FIND_INVALID", "script": script.script_name, "find": script.find_regex})
    return out


def regexed_chat(chat: Sequence[tuple[str, str]], scripts: Sequence[RegexScript], macros: MacroContext, *,
                 generation_type: str, typed: Sequence[bool] = (), runs: PatternRuns | None = None) -> list[str]:
    """Every chat message as it reaches the prompt (§13.1)."""
    return [text for text, _ in regexed_chat_steps(chat, scripts, macros, generation_type=generation_type,
                                                    typed=typed, runs=runs)]


@dataclass(frozen=True)
class RegexedChat:
    """The chat of one request through the regex scripts (SillyTavern regexes it once: the world info scan and the
    prompt read that pass): what it ran on, each message's text and steps, and the pattern limits it met."""

    given: tuple[tuple[str, str, bool], ...]  # each message's role, text, and whether it was typed now
    generation_type: str
    results: tuple[tuple[str, list[RegexStep]], ...]
    limits: tuple[dict[str, Any], ...]  # ST_PATTERN_LIMIT diagnostics

    def answers(self, given: tuple[tuple[str, str, bool], ...], generation_type: str) -> bool:
        return self.generation_type == generation_type and self.given == given


def regexed_chat_once(chat: Sequence[tuple[str, str]], scripts: Sequence[RegexScript], macros: MacroContext, *,
                      generation_type: str, typed: Sequence[bool]) -> RegexedChat:
    """`regexed_chat_steps` of the request's chat, kept with what it ran on."""
    runs = _new_runs()
    results = regexed_chat_steps(chat, scripts, macros, generation_type=generation_type, typed=typed, runs=runs)
    given = tuple((role, text, bool(typed[i]) if i < len(typed) else False) for i, (role, text) in enumerate(chat))
    return RegexedChat(given, generation_type, tuple(results), tuple(runs.diagnostics()))


def regexed_chat_steps(chat: Sequence[tuple[str, str]], scripts: Sequence[RegexScript], macros: MacroContext, *,
                       generation_type: str, typed: Sequence[bool] = (),
                       runs: PatternRuns | None = None) -> list[tuple[str, list[RegexStep]]]:
    """Every chat message as it reaches the prompt (§13.1), with the scripts that changed it: a message typed now
    first gets the user-input scripts of an unmarked call and the macros (what SillyTavern stores); then every
    message gets the prompt-only scripts of its placement (user input for user messages, AI output otherwise), at
    its depth: 0 for the newest, counting up toward older ones; with continue everything shifts by one (the
    continued message is -1)."""
    runs = runs if runs is not None else _new_runs()
    out = []
    shift = 1 if generation_type == "continue" else 0
    for index, (role, content) in enumerate(chat):
        is_typed = index < len(typed) and typed[index] and role == "user"
        out.append(_regexed_message(role, content, is_typed, len(chat) - 1 - index - shift, scripts, macros, runs))
    return out


def _regexed_message(role: str, content: str, is_typed: bool, depth: int, scripts: Sequence[RegexScript],
                     macros: MacroContext, runs: PatternRuns) -> tuple[str, list[RegexStep]]:
    placement = USER_INPUT if role == "user" else AI_OUTPUT
    steps: list[RegexStep] = []
    if is_typed:
        content, steps = regexed_steps(content, USER_INPUT, scripts, macros, runs=runs)
        content = expand_text_macros(content, macros).text
    content, prompt_steps = regexed_steps(content, placement, scripts, macros, is_prompt=True, depth=depth, runs=runs)
    return content, steps + prompt_steps
