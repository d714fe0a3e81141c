"""The studio's words for what the engine and the studio report: one home for both apps.

- Code meanings, in words a QA engineer can act on. Two families: diagnostics are findings listed in a successful
  result (the request was built, but something was adjusted, approximated or left out); refusals are errors (every
  `CodedError`: the engine's and the studio's `ServiceError`) that stop a preview or a write. The preview shows a
  diagnostic's code with its meaning; an error page shows the refusal's. `tests/web/test_wording.py` scans
  `assembly/` so a new code without a meaning here fails a test.
- Lock reasons: why a row or a part cannot move, one table (`LOCK_REASONS`) with each reason's short label (the
  preview page, `lock_words`) and its longer explanation (the editor, `LockWords`, which names the holding prompt).
- The engine's vocabulary (roles, deliveries, regions, trusts, lifetimes, module kinds, placements, backends,
  layout and position words, history statuses, host record kinds, placement controls) in short words
  (`ENGINE_WORDS`, `engine_word`; templates use the `engine_word` filter of `studio.wording_filters`). The stable
  codes stay in the markup's `data-*` hooks; only the visible text is translated.
- The editor's sentence for a refused write (`refusal_words`), and excerpts of long texts (`excerpt`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from django.utils.html import conditional_escape, format_html
from django.utils.safestring import mark_safe
from django.utils.translation import gettext, pgettext, pgettext_lazy
from django.utils.translation import gettext_lazy as _

from studio.refusal_lines import refusal_line

DIAGNOSTICS: dict[str, Any] = {
    # native backend adjustments
    # turn projection
    "PRE_STEP_ACCUMULATES": _("This pre-step text is kept in the durable history every turn, so each later request "
                              "carries one more copy of it; the projection shows how many copies and what they "
                              "cost."),
    "NATIVE_ROLE_ADJUSTED": _("In the standard backend an item's place (before or after the history and input "
                              "slots) decides its role, so this item goes out in another role (see from / to)."),
    "NATIVE_DELIVERY_ADJUSTED": _("The strategy asked for delivery as runtime context, but this item can only be sent "
                                  "as a pre-step message, so it was switched to pre-step."),
    "NATIVE_PLACEMENT_ADJUSTED": _("The standard backend sends messages region by region (system, history, before "
                                   "input, input, after input), so this item is sent at another place in the order "
                                   "than the strategy lists it (see placement)."),
    "NATIVE_DEPTH_APPROXIMATED": _("The item asks to sit a number of messages deep inside the chat; the standard "
                                   "backend cannot insert into history, so its place is approximated."),
    "NATIVE_DEPTH_BOUNDARY": _("A depth of 0 or 1 is placed just before or just after the history, the closest the "
                               "standard backend gets; the item is locked there."),
    "NATIVE_SLOTS_ABSENT": _("The placement asks for history and input slots, but the strategy has neither, so items "
                             "are ordered without them."),
    # sources and references
    "ASSEMBLY_SOURCE_UNAVAILABLE": _("An enabled rule names a source this engine does not provide; the rule sends "
                                     "nothing."),
    "ASSEMBLY_REFERENCE_UNAVAILABLE": _("A slot or macro refers to a source that has no output in this session (for "
                                        "example no world book), so the reference stays empty."),
    "UNSUPPORTED_MACRO": _("The text holds a {{macro}} the preview cannot evaluate; it is sent as written."),
    "UNSUPPORTED_MARKER": _("The preset holds a marker prompt the engine does not know; it sends nothing."),
    "WORLD_BOOK_SLOT_MISSING": _("A world book entry wants a slot (such as examples or the author's note) that this "
                                 "preset does not have, so it is placed after the character instead."),
    "WORLD_BOOK_OUTLET_MISSING": _("A world book entry goes to a named outlet, but no prompt contains the matching "
                                   "{{outlet::name}} marker, so the entry is not sent."),
    "OUTLET_MARKER_REPEATED": _("The same {{outlet::name}} marker appears in more than one place; only the first one "
                                "receives the entries."),
    # layout and positions
    "LAYOUT_DUPLICATE_SLOT": _("Two references open the same slot; the second one is ignored."),
    "LAYOUT_TARGET_MISSING": _("A saved block move names a block or anchor that is not in this request any more; "
                               "the move is skipped."),
    "POSITION_ANCHOR_MISSING": _("A manual position is anchored to something with no output in this request, so the "
                                 "item falls back to its default place (see winner)."),
    # whole request
    "ASSEMBLY_EMPTY": _("The request has no messages at all."),
    "ASSEMBLY_SYSTEM_ONLY": _("Every message of the request is a system message; most models expect at least one "
                              "user message."),
    "CONTEXT_BUDGET_EXCEEDED": _("The request is larger than the budget (context window minus reserved output); the "
                                 "eviction plan lists what would be dropped."),
    # SillyTavern parity
    "ST_PERSONA_POSITION_UNSUPPORTED": _("The persona's position setting is not one SillyTavern's chat-completion "
                                         "request uses, so the persona description is not sent."),
    "ST_MANDATORY_PROMPTS_EXCEED_CONTEXT": _("The prompts SillyTavern always sends do not fit in the preset's context "
                                             "size (context minus reply length); like SillyTavern, the request holds "
                                             "only what fitted, and history and examples are dropped."),
    "CHAT_EXTENSION_UNUSED": _("The author's note and extension prompts are SillyTavern chat injections; only a "
                               "strategy with SillyTavern placement (builtin-st or a copy of it) and a preset "
                               "places them, so this one is not sent with this strategy."),
    "ST_SWIPE_LEFT_OUT": _("A swipe asks for another version of the chat's last message, so SillyTavern leaves that "
                           "message (see id) out of the request."),
    "ST_REGEX_FIND_INVALID": _("A regex script's find is not a regular expression SillyTavern can compile, so the "
                               "script (see script) changes nothing, as in SillyTavern."),
    "ST_PATTERN_LIMIT": _("A pattern (a world info key or a regex script's find, see owner) went over a limit the "
                          "preview sets on every pattern (see limit: time, size or output), so it is skipped for "
                          "this request: the key matches nothing, the script changes nothing."),
    "TEXT_STOP_STRINGS_DROPPED": _("The custom stop strings are read as SillyTavern reads them, a JSON array of "
                                   "strings; what is not (see dropped) is left out of the stop list, as SillyTavern "
                                   "leaves it out without a word."),
    "AUTHOR_NOTE_NOT_INSERTED": _("The author's note (with anything that wraps it) could not be inserted into the "
                                  "chat, so it is left out (see reason)."),
}

REFUSALS: dict[str, Any] = {
    # bounded engine runs (studio/engine_runs.py)
    "ENGINE_DEADLINE_EXCEEDED": _("Assembling this took longer than the studio allows one run, so it was stopped. "
                                  "Shorten the history or the resources, or simplify the macros and patterns."),
    "ENGINE_FAILED": _("The engine could not assemble this input; the message names what went wrong. The rest of "
                       "the studio is unaffected."),
    "SESSION_CHANGED": _("The session changed while its request was being assembled (someone edited it at the "
                         "same time). Nothing was written; reload it and try again."),
    "UPLOAD_USED": _("This dry run's upload was imported already; look for the resource in the list."),
    "INPUT_DUPLICATE_KEY": _("A JSON object gives the same key twice; the message names it. Keep one of them."),
    # availability and strategy
    "REQUEST_ASSEMBLY_CORE_REQUIRED": _("This strategy needs the advanced (core) backend, and the session's host does "
                                        "not have it. Turn on \"The host has the advanced (core) backend\" in the host "
                                        "settings or pick a standard-backend strategy."),
    "ASSEMBLY_NATIVE_UNSUPPORTED": _("The strategy asks the standard backend for something it cannot do (for example "
                                     "a disabled history rule, or a depth); the rule or item is named with it."),
    "ASSEMBLY_NATIVE_UNAVAILABLE": _("The host offers no standard system-prompt assembly, so a standard-backend "
                                     "strategy cannot run."),
    "ASSEMBLY_NATIVE_SYSTEM_ORDER": _("The order puts conversation messages before the host's system prompt; move "
                                      "the native-system rule before history and input."),
    "ASSEMBLY_PLACEMENT_INVALID": _("The strategy's placement mode belongs to the other backend."),
    "STRATEGY_INVALID": _("The strategy document is not valid; the message names the field."),
    "STRATEGY_NOT_FOUND": _("No built-in strategy has this id."),
    "ASSEMBLY_REQUEST_INVALID": _("The request or one of its options is not valid; the message names the field."),
    "ASSEMBLY_DUPLICATE_SOURCE_RULE": _("Two enabled rules take the same source; only one rule may own a source. "
                                        "Disable or delete one of them (the message names both)."),
    "ASSEMBLY_RULE_UNSUPPORTED": _("A rule for the host's own messages (system prompt, history, input) asks for a "
                                   "role, lifetime or depth those messages cannot take; set role preserve, lifetime "
                                   "request and no depth."),
    "ASSEMBLY_INVALID": _("A message would be sent twice, or a slot names a message that does not exist."),
    "IMPORT_INVALID": _("A SillyTavern file or a session's resource (preset, card, persona, world book, ...) has a "
                        "field the engine cannot read; the message names the field and what it expected."),
    "WORLD_INFO_INVALID": _("A world book setting or entry has a value keyword activation cannot use; the message "
                            "names it."),
    "TOKENIZER_UNKNOWN": _("The tokenizer is not one of those the engine ships."),
    # structure
    "ASSEMBLY_REFERENCE_CYCLE": _("Slots or macros refer to each other in a circle, so no order exists."),
    "ASSEMBLY_TOOL_TRANSACTION": _("A tool call and its results must stay together, and something would land between "
                                   "them, or a call has no result yet. Fix the history or move the item."),
    "ASSEMBLY_TOO_LARGE": _("The text outside the conversation is larger than 2 MiB."),
    "ASSEMBLY_LAYOUT_UNSUPPORTED": _("A saved block move is not allowed: the block follows a slot or the host, or the "
                                     "move crosses a role or delivery boundary."),
    "BLOCK_ALREADY_THERE": _("The block already sits where the move would put it; nothing was stored."),
    "BLOCK_MOVE_IGNORED": _("The move would leave the request as it was (the placement orders it itself); nothing "
                            "was stored."),
    "POSITION_ANCHOR_CYCLE": _("Manual positions are anchored to each other in a circle."),
    "NATIVE_PREVIEW_VARIABLE_UNAVAILABLE": _("A host section uses a {{variable}} that the host settings do not give; "
                                             "add it under variables."),
    "NATIVE_TEXT_VARIABLE_UNAVAILABLE": _("A custom text rule uses a {{variable}} that the host settings do not give; "
                                          "add it under variables."),
    # outlets (the placement primitive)
    "INVALID_BLOCK": _("A world book outlet entry could not be placed; the message says which."),
    "INVALID_LAYOUT": _("The outlets of this request could not be laid out; the message says why."),
    "ANCHOR_MISSING": _("An outlet entry names an outlet that no prompt declares."),
    "NESTED_OUTLET": _("An outlet entry contains an outlet marker itself; outlets do not nest."),
    "OUTLET_MARKER_COUNT": _("An outlet marker must appear exactly once in its message."),
    "DUPLICATE_BLOCK_ID": _("Two outlet entries have the same id."),
    "INVALID_ROLE": _("An outlet entry asks for a role its host message does not have."),
    # SillyTavern parity steps
    "ST_INPUT_INVALID": _("A value the SillyTavern steps need is missing or of the wrong kind; the message names it."),
    "ST_DUPLICATE_ID": _("Two chat messages have the same id."),
    "ST_DUPLICATE_KEY": _("Two extension prompts have the same key."),
    "ST_DUPLICATE_SOURCE": _("One source is injected into the chat twice."),
    "ST_EXTENSION_ORDER": _("Extension prompts always use order 100 in SillyTavern."),
    "ST_MAIN_NOT_IN_CHAT": _("The main prompt was expected among the in-chat prompts and is not there."),
    "ST_COMPOSE_UNKNOWN_SLOT": _("The prompt order names a slot the SillyTavern steps do not know."),
    "ST_COMPOSE_GROUP_UNPLACED": _("A prompt that must be sent has no place in the prompt order."),
    # budget selection (engine.md §8) and fragments: standalone APIs, listed so no code is left unexplained
    "BUDGET_INVALID_LIMIT": _("The budget limit must be a whole number of tokens, zero or more."),
    "BUDGET_INVALID_ITEMS": _("The items to choose from must be a list."),
    "BUDGET_INVALID_ITEM": _("An item to choose from lacks an id, a cost or a flag it needs."),
    "BUDGET_INVALID_COST": _("An item's cost must be a whole number of tokens, zero or more."),
    "BUDGET_INVALID_GOAL": _("The budget goal is not one the selection knows."),
    "BUDGET_INVALID_GOAL_COST": _("The goal's own cost must be a whole number of tokens, zero or more."),
    "BUDGET_GOAL_TOO_LARGE": _("The fixed part alone is larger than the budget."),
    "FRAGMENT_INVALID_CONFIGS": _("Fragment definitions must be a list."),
    "FRAGMENT_INVALID_CONFIG": _("A fragment definition is not an object."),
    "FRAGMENT_INVALID_ID": _("A fragment id is missing or not allowed."),
    "FRAGMENT_DUPLICATE_ID": _("Two fragments have the same id."),
    "FRAGMENT_UNKNOWN_FIELD": _("A fragment definition has a field the builder does not know."),
    "FRAGMENT_CONFLICTING_FIELD": _("A fragment definition gives two fields that exclude each other."),
    "FRAGMENT_MISSING_FIELD": _("A fragment definition lacks a required field."),
    "FRAGMENT_INVALID_DESCRIPTION": _("A fragment's description is not text."),
    "FRAGMENT_INVALID_FORMAT": _("A fragment's format is not a function."),
    "FRAGMENT_INVALID_LIFETIME": _("A fragment's lifetime is not one of the known lifetimes."),
    "FRAGMENT_INVALID_MAX_CHARS": _("A fragment's size limit is not a positive whole number."),
    "FRAGMENT_INVALID_MAX_INPUT_CHARS": _("A fragment's input size limit is not a positive whole number."),
    "FRAGMENT_INVALID_ROLE": _("A fragment's role is not one of the known roles."),
    "FRAGMENT_INVALID_SOURCE_ID": _("A fragment's source id is not valid."),
    "FRAGMENT_INVALID_TRUST": _("A fragment's trust label is not one of the known labels."),
    "FRAGMENT_TRUST_ROLE": _("Untrusted content (user or tool) cannot become a system message."),
    "FRAGMENT_INVALID_VALUE": _("A fragment's value cannot be turned into text."),
    "FRAGMENT_ASYNC_FORMAT": _("A fragment's format returned a pending result; formats must answer at once."),
    "FRAGMENT_FORMAT_FAILED": _("A fragment's format raised an error."),
    "FRAGMENT_INPUT_TOO_LARGE": _("A fragment's input is larger than its input limit."),
    "FRAGMENT_TOO_LARGE": _("A fragment's text is larger than its size limit."),
    # the studio's own refusals
    "NOT_FOUND": _("The session, strategy, revision or message does not exist (any more)."),
    "FORBIDDEN": _("Your role may not do this."),
    "INPUT_INVALID": _("A field of the form is missing or has the wrong kind of value; the message names it."),
    "SESSION_ASSEMBLY_OFF": _("No strategy is applied to this session (assembly is off). Choose a strategy to "
                              "preview."),
    "REVISION_NOT_FOUND": _("The strategy has no saved revision yet; save one in the editor first."),
    "SESSION_HAS_GOLDENS": _("The session has golden snapshots, QA's record of its answers. If the session really "
                             "should go, an admin deletes them first, on the Goldens page."),
    "SESSION_HISTORY_NOT_EMPTY": _("A greeting starts an empty history, and this session already has messages."),
    "SESSION_HISTORY_CONFLICT": _("Someone changed the history since you loaded the page; reload and try again."),
    "STRATEGY_READ_ONLY": _("Built-in strategies are read-only; copy one to edit it."),
    "STRATEGY_SLUG_TAKEN": _("Another strategy took this id at the same moment; save again to get a free id."),
    "STRATEGY_VERSION_CONFLICT": _("Someone saved this strategy since you loaded it; the page shows the fresh state, "
                                   "make your change again."),
    "TEMPLATE_READ_ONLY": _("Built-in text-completion templates are read-only; copy one to edit it."),
    "TEMPLATE_CHANGED": _("Someone saved this template since you loaded it; the page shows the fresh fields, make "
                          "your change again."),
    "UPLOAD_EXPIRED": _("The file of this dry run is no longer kept; upload it again."),
    "CONFLICT": _("The change clashes with the current state (the message says how); nothing was changed."),
    "UNDO_UNAVAILABLE": _("The last edit can no longer be undone: the draft has changed since (another edit or another "
                          "person); nothing was changed."),
    "CSRF_FAILED": _("The form's security token is missing or old; reload the page and send it again."),
    "NOT_AUTHENTICATED": _("You are not logged in (or your login expired); log in and try again."),
    "METHOD_NOT_ALLOWED": _("This address does not accept this kind of request (for example a form sent to a "
                            "read-only page)."),
    "INPUT_NOT_JSON": _("The text sent is not valid JSON; the message names the line of the first problem."),
    "INPUT_UNREADABLE": _("The file could not be read (missing, not allowed or not text)."),
    "INPUT_UNSAFE": _("A field holds characters or a shape the studio does not store (such as control "
                      "characters); the message names the field."),
    "PAYLOAD_TOO_LARGE": _("What was sent is larger than the studio accepts; the message gives the limit."),
    "UNSUPPORTED_MEDIA_TYPE": _("The file or body is of a kind this address does not read (for example an image "
                                "where JSON was expected)."),
    # refused strategy edits (assembly.edits)
    "ORDER_NOT_PERMUTATION": _("The new order must list the same rows, each once; reload the editor and try again."),
    "RULE_NOT_FOUND": _("The rule is not part of this strategy any more; reload the editor."),
    "RULE_NOT_REMOVABLE": _("Only custom text rules can be removed; turn a module rule off instead."),
    "RULE_CONTROL_FIXED": _("A runtime-context control is only switched on or off; it has no other setting to change."),
    "POSITION_NOT_FOUND": _("The position row is not part of this strategy any more; reload the editor."),
    "POSITION_LOCKED": _("The row is held in place by a prompt slot, a macro or an anchor, so it cannot move."),
    "PLACEMENT_SET_BY_LAYOUT": _("The strategy has a layout policy, which decides its placement, so the placement "
                                 "cannot be chosen in the settings."),
    "OVERRIDE_NOT_FOUND": _("There is no saved move for this block any more; reload the editor."),
}

MEANINGS: dict[str, Any] = {**REFUSALS, **DIAGNOSTICS}

# Fields of a diagnostic that are worth showing next to its meaning, in this order; the rest follow.
_DETAIL_ORDER = ("name", "id", "from", "to", "placement", "depth", "macro", "sourceId", "ruleId", "positionId",
                 "winner", "outlet", "slotId", "missing", "position", "reason", "limit", "total", "over_by")


# Why the engine put a piece where it is (`NodeView.position_decision`), as the preview's parts table and the
# editor's statements say it.
DECISION_WORDS = {
    "source": _("its rule's place in the strategy"),
    "preset": _("a slot of the preset holds it"),
    "resource": _("anchored to another resource"),
    "user": _("a manual position set in the strategy"),
    "runtime": _("a conversation message: the host fixes its place"),
    "resource-depth": _("its own depth setting inside the chat"),
}


def list_words(items, *, clauses: bool = False) -> str:
    """Items joined as the page's language lists them: ", " in English; Chinese "、" between items, "，" between
    clauses (`clauses`: each item is a phrase with its own number or verb)."""
    if clauses:
        return pgettext("between the clauses of a list", ", ").join(str(item) for item in items)
    return pgettext("between the items of a list", ", ").join(str(item) for item in items)


def label_colon() -> str:
    """The colon between a label and its value in the page's language: ": " in English, "：" in Chinese."""
    return pgettext("between a label and its value", ": ")


def known_meaning(code: str) -> str:
    """The plain-language meaning of `code`, or "" for a code without one."""
    found = MEANINGS.get(code)
    return str(found) if found is not None else ""


def meaning(code: str) -> str:
    """The plain-language meaning of `code`; an unknown code says so rather than showing nothing."""
    return known_meaning(code) or str(_("No description for this code yet."))


# A diagnostic's field names as the page shows them (English: the field itself), and the fields whose value is an
# engine code of a vocabulary of `ENGINE_WORDS`.
_DETAIL_LABELS = {key: pgettext_lazy("diagnostic field", key) for key in _DETAIL_ORDER + (
    "role", "delivery", "lifetime", "copies_after", "turns", "projected_tokens", "text", "left_out", "script")}
_DETAIL_VOCABULARY = {"from": "role", "to": "role", "role": "role", "placement": "region", "delivery": "delivery",
                      "lifetime": "lifetime"}


def diagnostic_details(diagnostic: dict[str, Any]) -> list[tuple[str, str]]:
    """The diagnostic's fields other than `code`, as (name, text) pairs in a stable, readable order; field names
    and the engine codes among the values in the page's language."""
    keys = [k for k in _DETAIL_ORDER if k in diagnostic] + sorted(
        k for k in diagnostic if k != "code" and k not in _DETAIL_ORDER)
    return [(str(_DETAIL_LABELS.get(key, key)), _detail_text(key, diagnostic[key])) for key in keys]


def _detail_text(key: str, value: Any) -> str:
    vocabulary = _DETAIL_VOCABULARY.get(key)
    if vocabulary and isinstance(value, str):
        return engine_word(vocabulary, value)
    if key == "name" and isinstance(value, str):
        return node_name(value)
    return _text(value)


def _text(value: Any) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k}: {_text(v)}" for k, v in value.items())
    if isinstance(value, list | tuple):
        return ", ".join(_text(v) for v in value)
    return "" if value is None else str(value)


# ---------------------------------------------------------------------------------------------- engine words


def _words(msgctxt: str, /, **words: str) -> dict[str, Any]:
    """One vocabulary: code -> its short word, each msgid under `msgctxt` (the same English word, "system" say,
    is a role in one table and a region in another)."""
    return {code.replace("__", "-").replace("_dot_", ".").rstrip("_"): pgettext_lazy(msgctxt, word)
            for code, word in words.items()}


# What the host keeps of each request message, in words (web.md screen 3: "what persists" read at a glance): the full
# preview's history entry column and the editor's live preview say it so, one label a row; the stable value stays in
# `data-history-status`.
HISTORY_STATUS_WORDS: dict[str, Any] = {
    "native": _("kept: already in history"),
    "appended": _("kept: added to history by this request"),
    "reused": _("snapshot reused"),
    "request-only": _("sent once (request only)"),
    "snapshot": _("kept: added to history as a snapshot"),
}


# The engine's codes as the pages show them. Keys are the engine's own values (`assembly.strategy` tuples,
# `native.REGIONS`, `fragments.TRUSTS`, `host` statuses and record kinds, `positions.placement_controls`);
# `tests/web/test_chinese_engine_words.py` renders every page in Chinese and fails on a code left in English.
ENGINE_WORDS: dict[str, dict[str, Any]] = {
    "role": _words("message role", system="system", user="user", assistant="assistant", tool="tool",
                   preserve="as the source gives it"),
    "delivery": _words("message delivery", system="system prompt", history="history", input="input",
                       context="runtime context", pre__step="pre-step message", request="request only",
                       snapshot="snapshot"),
    "region": _words("request region", system="system", history="history", before__input="before the input",
                     input="input", after__input="after the input", request="request"),
    "trust": _words("content trust", system="host", operator="operator", user="end user", tool="tool output"),
    "lifetime": _words("content lifetime", request="this request only", snapshot="snapshot", native="host's own",
                       turn="one turn", session="the session", static="static"),
    "module": _words("module kind", native__system="host system prompt", preset="preset", persona="persona",
                     character="character card", worldbook="world book", history="history", input="input",
                     phi="post-history instructions", custom="custom text", dsh_dot_text="DSH text",
                     dsh_dot_runtime__context="runtime context", dsh_dot_sandbox__policy="sandbox policy",
                     dsh_dot_approval__policy="approval policy", author_note="author's note",
                     generation="generation"),
    "placement": _words("strategy placement", modules="module order", st="SillyTavern order",
                        native__roles="roles first", native__slots="preset slots first"),
    "backend": _words("assembly backend", native="standard", core="advanced"),
    "layout_source": _words("layout source", manual="manual", preset__slots="preset slots"),
    "layout_identity": _words("layout identity", preserve="keep the rule's identity", position="by position"),
    "layout_fallback": _words("layout fallback", source__order="source order", error="refuse"),
    "position_placement": _words("position placement", source="its module decides", list="by this list"),
    "side": _words("anchor side", before="before", after="after"),
    "history_status": _words("history status", native="already in history", appended="added to history",
                             reused="snapshot reused", request__only="sent once", snapshot="kept as snapshot"),
    "record_kind": _words("history record kind", user="user message", assistant="assistant reply",
                          system__prompt="system prompt record", runtime__context="runtime-context snapshot",
                          dsh__prompt__assembler="pre-step message", assembly__snapshot="snapshot record",
                          request__assembly="strategy revision record"),
    "control": _words("placement control", native="host", preset="preset slots", empty="nothing placed",
                      mixed="slots and order", independent="module order"),
    # what an import creates (`strategies_app.services.ImportReport`: its kind and the keys of `creates`)
    "resource_kind": _words("imported resource", preset="preset", character="character card",
                            worldbook="world book", persona="persona", regex="regex scripts", chat="chat log", group="group chat definition",
                            strategy="strategy", revision="revision", prompt_entries="prompts", avatar="avatar",
                            entries="entries", regex_scripts="regex scripts",
                            template="text-completion template", instruct="instruct template",
                            context="context template", sysprompt="system prompt", reasoning="reasoning template"),
    "generation": _words("generation type", normal="normal", continue_="continue", impersonate="impersonate",
                         swipe="swipe", regenerate="regenerate", quiet="quiet"),
    "system_prompt_update": _words("system prompt update", head="at the head", in__history="in the history"),
}


# The field an engine node name ends with ("Mira · description", `sources.character_blocks`): the card's or
# persona's part, translated after the name (which is data and stays as written).
NODE_FIELDS = _words("card field", description="description", personality="personality", scenario="scenario",
                     examples="examples", system="system prompt", phi="post-history instructions",
                     persona="persona", greeting="greeting", character_s_note="character's note")
NODE_FIELDS["character's note"] = NODE_FIELDS.pop("character_s_note")


def node_name(name: str | None) -> str:
    """An engine node's name for people: "<resource name> · <field>" with the field in words."""
    if not name:
        return name or ""
    if name in ENGINE_WORDS["module"]:  # a node the engine names after its module ("history")
        return str(ENGINE_WORDS["module"][name])
    head, sep, field = name.rpartition(" · ")
    found = NODE_FIELDS.get(field) if sep else None
    return f"{head} · {found}" if found is not None else name


def engine_word(vocabulary: str, code: Any) -> str:
    """The short word for the engine's `code` in `vocabulary` (a key of `ENGINE_WORDS`); a region with a detail
    (`after-input:context`) gets both; an unknown code is shown as it is (it is data then, or new)."""
    if code is None or code == "":
        return ""
    words = ENGINE_WORDS[vocabulary]
    found = words.get(str(code))
    if found is not None:
        return str(found)
    head, _sep, detail = str(code).partition(":")
    if detail and head in words:
        more = ENGINE_WORDS["delivery"].get(detail)
        return f"{words[head]} · {more}" if more is not None else f"{words[head]} · {detail}"
    return str(code)


# ---------------------------------------------------------------------------------------------- lock reasons


@dataclass(frozen=True)
class LockReason:
    """One reason a part cannot move, in two wordings: `label`, short, for the preview's part rows; `explanation`,
    longer, for the editor, which names the prompt that holds it. Both take the same %-placeholders (slot, owner,
    depth, macro, outlet, prompt) where the reason has them."""

    label: Any
    explanation: Any


# The engine's lock reasons (Node.lock_reason): "reference:<owner>", "macro:<name>", "macro:original",
# "macro:outlet::<name>", "depth", "native-depth-boundary", "runtime". "reference" with a slot id: the editor names
# the slot's prompt (`LockWords.slot`).
LOCK_REASONS: dict[str, LockReason] = {
    "reference": LockReason(_("held by the %(slot)s slot of the %(owner)s"), None),
    "reference-unslotted": LockReason(_("held by a slot of the %(owner)s"), _("held by a slot of %(owner)s")),
    "macro:original": LockReason(
        _("pulled in by {{original}} in a card override"),
        _("replaces the preset prompt “%(prompt)s” (the card overrides it; {{original}} keeps the prompt's text)")),
    "macro:outlet": LockReason(_("placed by the {{outlet::%(name)s}} marker"),
                               _("fills {{outlet::%(outlet)s}} in “%(prompt)s”")),
    "macro": LockReason(_("pulled in by the {{%(name)s}} macro"), _("referenced by {{%(macro)s}} in “%(prompt)s”")),
    "depth": LockReason(_("inserted at its depth inside the chat"),
                        _("inserted at depth %(depth)s of the chat; depth insertion fixes its place")),
    "native-depth-boundary": LockReason(_("depth 0 or 1: pinned at the edge of the history"),
                                        _("pinned to the native depth boundary of the chat (depth 0 or 1)")),
    "runtime": LockReason(_("fixed by the host"), _("a conversation message: the host fixes its place")),
}


def _lock_reason(lock_reason: str, slot_id: str | None) -> tuple[str | None, dict[str, str]]:
    """The `LOCK_REASONS` key of an engine lock reason and its arguments; None for a reason without words."""
    if lock_reason.startswith("reference:"):
        owner = engine_word("module", lock_reason.split(":", 1)[1])
        return ("reference", {"owner": owner}) if slot_id else ("reference-unslotted", {"owner": owner})
    if lock_reason == "macro:original":
        return "macro:original", {}
    if lock_reason.startswith("macro:outlet::"):
        return "macro:outlet", {"name": lock_reason.split("::", 1)[1]}
    if lock_reason.startswith("macro:"):
        return "macro", {"name": lock_reason.split(":", 1)[1]}
    return (lock_reason if lock_reason in LOCK_REASONS else None), {}


def lock_words(lock_reason: str | None, slot_id: str | None = None) -> str:
    """Why a part of a preview message cannot move, in words (the reason's short label)."""
    if not lock_reason:
        return ""
    key, args = _lock_reason(lock_reason, slot_id)
    if key is None:
        return lock_reason
    if key == "reference":  # the slot's name is the preset's identifier: shown as code, the words around it escaped
        args = {**{k: conditional_escape(v) for k, v in args.items()},
                "slot": format_html("<code>{}</code>", _slot_name(slot_id or ""))}
        return mark_safe(conditional_escape(str(LOCK_REASONS[key].label)) % args)  # every part escaped above
    return str(LOCK_REASONS[key].label) % args if args else str(LOCK_REASONS[key].label)


def _slot_name(slot_id: str) -> str:
    """`preset:worldInfoBefore:before` -> `{{worldInfoBefore}}`-like marker name for people."""
    parts = slot_id.split(":")
    return parts[1] if len(parts) > 1 else slot_id


class LockWords:
    """The editor's lock reasons in words: which slot or macro of which prompt holds a row (web.md: "referenced by
    {{worldInfoBefore}} in Main Prompt"). `prompts`: the session preset's prompts, identifier -> (name, content)."""

    _TEXT_REFERENCE = re.compile(r"^(?P<item>.+?):(?P<offset>\d+):(?P<group>[^:]+)$")
    _MACRO_AT = re.compile(r"\{\{\s*([^{}]+?)\s*\}\}")

    def __init__(self, draft: dict[str, Any], prompts: dict[str, tuple[str, str]]):
        self.rules = draft["rules"]
        self.prompts = prompts

    def node(self, node: Any) -> str:
        """Why a node of the result (an `assembly.results.NodeView`) is locked, naming what holds it."""
        reason = node.lock_reason or ""
        key, args = _lock_reason(reason, node.slot_id)
        if key == "reference":
            return self.slot(node.slot_id)
        if key == "depth":
            args["depth"] = node.depth if node.depth is not None else node.requested_depth
        if key not in ("depth", "native-depth-boundary", "runtime", "reference-unslotted"):
            return reason  # a macro's hold is worded per holder (`child`)
        return str(LOCK_REASONS[key].explanation) % args if args else str(LOCK_REASONS[key].explanation)

    def child(self, reason: str, holder: Any) -> str:
        """Why a node's child (its output taken in by `holder`'s macro) is held, naming the holding prompt."""
        key, args = _lock_reason(reason, None)
        prompt = holder.name or holder.id
        if key == "macro:outlet":
            return str(LOCK_REASONS[key].explanation) % {"outlet": args["name"], "prompt": prompt}
        if key == "macro:original":
            return str(LOCK_REASONS[key].explanation) % {"prompt": prompt}
        if key == "macro":
            return str(LOCK_REASONS[key].explanation) % {"macro": args["name"], "prompt": prompt}
        return reason

    def slot(self, slot_id: str) -> str:
        rule = next((r for r in sorted(self.rules, key=lambda r: -len(r["id"]))
                     if slot_id.startswith(r["id"] + ":")), None)
        if rule is None:
            return gettext("held by the slot %(slot)s") % {"slot": slot_id}
        rest = slot_id[len(rule["id"]) + 1:]
        reference = self._TEXT_REFERENCE.match(rest)
        if reference is not None:  # a {{macro}} inside a prompt's (or a custom rule's) text
            offset = int(reference["offset"])
            if rule["kind"] == "preset":
                name, text = self.prompts.get(reference["item"], (reference["item"], ""))
            else:
                name, text = rule.get("name") or rule["id"], rule.get("text") or ""
            found = self._MACRO_AT.match(text, offset)
            macro = "{{" + found.group(1) + "}}" if found else "{{" + reference["group"] + "}}"
            return gettext("referenced by %(macro)s in “%(prompt)s”") % {"macro": macro, "prompt": name}
        item = rest.split(":", 1)[0]
        if rule["kind"] == "preset":
            name = self.prompts.get(item, (item, ""))[0]
            return gettext("held by the preset marker “%(prompt)s” (%(identifier)s)") % {"prompt": name,
                                                                                         "identifier": item}
        return gettext("held by the slot %(slot)s of rule “%(rule)s”") % {
            "slot": rest, "rule": rule.get("name") or rule["id"]}


# ---------------------------------------------------------------------------------------------- refused writes


# The engine's layout refusals (assembly/layout.py) by their opening words, as the editor says them.
_LAYOUT_REFUSALS = (
    ("This block follows a slot or a runtime anchor", _(
        "This block follows its preset slot, or a place the chat fixes: tick “detach it from its slot” to move a slot's "
        "block; the chat and the items at a depth never move. Nothing was changed.")),
    ("This move crosses a native role or delivery boundary", _(
        "In the standard backend this move would cross a boundary between the system prompt, the history, the input "
        "and what follows it, so the block would change its role or delivery. Nothing was changed.")),
    ("Explicitly adopt a resource layout policy", _(
        "Choose a layout policy first (the “Priority and layout policy” panel), then move blocks. Nothing was changed.")),
    ("Refresh current resources before moving this block", _(
        "A block of this move is no longer in the preview: reload the page and move it again. Nothing was changed.")),
)


def refusal_words(error: dict[str, Any], positions: list[dict[str, Any]]) -> str:
    """The editor's sentence for a refused write (`error`: its JSON); `positions`: the editor's rows, to name the
    locked ones."""
    code, detail = error.get("code"), error.get("detail") or {}
    if code == "STRATEGY_VERSION_CONFLICT":
        return gettext("Someone saved a newer version of this draft (version %(version)s) after you loaded it. "
                       "Nothing was changed; the editor now shows the current state.") % {
            "version": detail.get("version")}
    if code == "POSITION_LOCKED":
        rows = {row["key"]: row for row in positions}
        parts = []
        for key in detail.get("rows", []):
            row = rows.get(key)
            if row is not None:
                parts.append(f"“{row['name']}” ({'; '.join(row['reasons']) or gettext('not configurable')})")
            else:
                parts.append(key)
        return gettext("A locked row cannot move or be placed: %(rows)s. Nothing was changed.") % {
            "rows": ", ".join(parts)}
    if code == "ORDER_NOT_PERMUTATION":
        problems = [f"{label}: {', '.join(detail[key])}" for label, key in (
            (gettext("unknown"), "unknown"), (gettext("missing"), "missing"), (gettext("repeated"), "repeated"))
            if detail.get(key)]
        return gettext("The new order was refused: it must list each current row exactly once (%(problem)s). "
                       "Nothing was changed.") % {"problem": "; ".join(problems)}
    if code == "RULE_NOT_FOUND":
        return gettext("That rule is no longer in this draft. Nothing was changed.")
    if code == "RULE_NOT_REMOVABLE":
        return gettext("Only custom text rules can be removed; switch a module off instead. Nothing was changed.")
    if code == "ASSEMBLY_LAYOUT_UNSUPPORTED":
        message = error.get("error") or ""
        for opening, words in _LAYOUT_REFUSALS:
            if message.startswith(opening):
                return str(words)
        why = re.sub(r": block:.*$", "", message)  # the block's id is in the technical detail
        return gettext("This block cannot move like that: %(why)s. Nothing was changed.") % {"why": why}
    if code == "BLOCK_ALREADY_THERE":
        return gettext("The block already sits there in this session's request: no move was stored.")
    if code == "BLOCK_MOVE_IGNORED":
        if detail.get("placement") == "st":
            return gettext("In SillyTavern order the preset's prompt order places this request, so a block move "
                           "would change nothing: no move was stored. Reorder the preset's prompts instead.")
        return gettext("This move would leave the request as it was: no move was stored.")
    if code == "OVERRIDE_NOT_FOUND":
        return gettext("That block has no stored move any more. Nothing was changed.")
    if code == "POSITION_NOT_FOUND":
        return gettext("That position row is no longer in this draft. Nothing was changed.")
    if code == "PLACEMENT_SET_BY_LAYOUT":
        return gettext("Placement was not changed: this strategy has a layout policy, and the layout policy decides "
                       "the placement (now %(placement)s). Nothing was changed.") % {
            "placement": engine_word("placement", detail.get("placement"))}
    if code == "STRATEGY_READ_ONLY":
        return gettext("Built-in strategies are read-only: copy this one to edit it.")
    if code == "FORBIDDEN":
        return gettext("You may not change this strategy (%(why)s).") % {"why": error.get("error")}
    # the engine's own line, in the page's language where the catalogue has its words (a strategy's bad field), as
    # a clause of the sentence: a form's message ends with its own full stop
    why = refusal_line(error).text.rstrip().removesuffix(".").removesuffix("。")
    if code == "INPUT_INVALID" or code == "STRATEGY_INVALID":
        return gettext("The change was refused: %(why)s. Nothing was changed.") % {"why": why}
    return gettext("The change was refused (%(code)s): %(why)s. Nothing was changed.") % {"code": code, "why": why}


# ---------------------------------------------------------------------------------------------- excerpts

EXCERPT_CHARS = 160


def excerpt(text: str, limit: int = EXCERPT_CHARS, *, as_written: bool = False) -> str:
    """The start of `text` in at most about `limit` characters, "…" when cut. Whitespace runs become one space,
    unless `as_written` (the editor's preview keeps the text's own line breaks and cuts after `limit`)."""
    shown = text if as_written else " ".join(text.split())
    if len(shown) <= limit:
        return shown
    return shown[:limit] + "…" if as_written else shown[:limit - 1].rstrip() + "…"
