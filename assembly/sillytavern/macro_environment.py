"""What SillyTavern's macros read during one generation, and the one place a text goes through them.

One `MacroEnvironment` serves a whole generation: the names, the card fields (each through the macros without the
card fields, `baseChatReplace`: the legacy engine reads every field in each `substituteParams` call, Macros 2.0 a
field when a macro asks for it), the chat as it stands, the outlets, and the variables
every macro of the generation reads and changes in turn. `evaluate` is SillyTavern's `substituteParams` with the
engine the request chose (`legacy` or `v2`).

SillyTavern's order, which decides what variable macros see: the typed message (sendMessageAsUser, before it joins
the chat), the card fields (`start_generation`), the greeting, the examples' parse (`parse_examples`); world info
as it activates (keys as the scan tries them, then contents; a book whose entries match card fields reads the
persona as the scan first builds such an entry's text and the character fields after the scan, as SillyTavern's own
runs show: `read_persona_scan_data`, `read_scan_data`); then `macro_order` for the prompts and
`sillytavern.request` for the in-chat extension prompts, the history (newest first) and the utility prompts.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from assembly.macros import holds_macro
from assembly.sillytavern.macro_clock import conversation_clock, request_clock
from assembly.sillytavern.macro_variables import MacroVariables
from assembly.sillytavern.macros_legacy import LegacyCall, evaluate_legacy

_START = re.compile(r"<START>", re.IGNORECASE)
# the character fields world-info entries can match (matchCharacterDescription, ...), as macros
_SCAN_FIELDS = "{{description}}{{personality}}{{charDepthPrompt}}{{scenario}}{{creatorNotes}}"
DEFAULT_EXAMPLE_SEPARATOR = "***"  # power_user.context.example_separator's default in SillyTavern 1.18
_NAMES = re.compile(r"\{\{(?:user|char)\}\}", re.IGNORECASE)  # the two name macros, in either engine
_LEFT = re.compile(r"\{\{\s*([A-Za-z_][\w-]*)[^{}]*\}\}")
# the order Generate() reads the card fields in (the card's system prompt right after the persona: st-macros shows
# Macros 2.0 reading it before the description)
_EAGER_ORDER = ("persona", "system", "description", "personality", "scenario", "mesExamplesRaw", "jailbreak",
                "charDepthPrompt", "creatorNotes")
_EAGER_NAMES = frozenset(_EAGER_ORDER)
# Generate()'s card fields in the order it reads them: (the engine's field name, SillyTavern's)
_GENERATE_FIELDS = (("description", "description"), ("personality", "personality"), ("persona", "persona"),
                    ("scenario", "scenario"), ("examples", "mesExamplesRaw"), ("system", "system"),
                    ("phi", "jailbreak"), ("depth_prompt", "charDepthPrompt"), ("creator_notes", "creatorNotes"))


def parse_mes_examples(text: str) -> list[str]:
    """`parseMesExamples` for chat completion: each `<START>` block as "<START>\\n" + block.trim() + "\\n"."""
    if not text or text == "<START>":
        return []
    if not text.startswith("<START>"):
        text = "<START>\n" + text.strip()
    return [f"<START>\n{block.strip()}\n" for block in _START.split(text)[1:]]


class _CardFields:
    """The card fields of one `substituteParams` call, each substituted on first use (baseChatReplace)."""

    __slots__ = ("env", "done")

    def __init__(self, env: MacroEnvironment):
        self.env = env
        self.done: dict[str, str] = {}

    def get(self, name: str) -> str:
        if name in self.done:
            return self.done[name]
        if name == "mesExamples":
            value = "".join(parse_mes_examples(self.get("mesExamplesRaw")))
        else:
            raw = self.env.card.get("mesExamples" if name == "mesExamplesRaw" else name) or ""
            value = self.env.steady_field(name, raw) if name != "version" else raw
        self.done[name] = value
        return value


# the containers the macros add to once the chat is read (MacroEnvironment.fork copies them)
_FORKED = ("outlets_read", "legacy_names", "fields", "unsupported", "prepared", "steady")


@dataclass
class MacroEnvironment:
    """The macros' view of one generation. `card`: raw card fields by SillyTavern's names (description,
    personality, scenario, mesExamples, persona, system, jailbreak, version, charDepthPrompt, creatorNotes)."""

    user: str = "User"
    char: str = ""
    engine: str = "legacy"
    card: Mapping[str, str] = field(default_factory=dict)
    variables: MacroVariables = field(default_factory=MacroVariables)
    chat: Sequence[Mapping[str, Any]] = ()  # SillyTavern's `chat` as macros read it: role and content, oldest first
    # the outlets' texts when known; None: `{{outlet::name}}` stays for the placement step that fills outlets
    outlets: Mapping[str, str] | None = None
    outlet_entries: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # each outlet's entries (uids)
    outlets_read: list[str] = field(default_factory=list)  # the outlets filled, by name, for a caller to attribute
    send_box: str = ""
    model: str = ""
    max_prompt: int = 0
    registered: dict[str, Callable[[MacroEnvironment], Any]] = field(default_factory=dict)  # called with this environment
    # the legacy engine's name order (and the names' keys), by call shape
    legacy_names: dict[tuple, tuple[tuple[str, ...], tuple[str | None, ...]]] = field(default_factory=dict)
    variables_before: dict[str, dict[str, Any]] = field(default_factory=dict)
    sent: list[dict[str, Any]] = field(default_factory=list)  # the chat, the messages sent now substituted
    emptied: set[str] = field(default_factory=set)  # ids of sent messages whose macros left nothing
    # the card fields as Generate() read them at its start (getCharacterCardFields), by the engine's field names
    fields: dict[str, str] = field(default_factory=dict)
    eager_fields: bool = True
    unsupported: list[str] = field(default_factory=list)  # macros the engine left as written, as it met them
    # the generation's quiet prompt and "Start Reply With", which preparePromptsForChatCompletion puts through the
    # macros among its own prompts
    quiet_prompt: str = ""
    reply_start: str = ""
    # texts preparePromptsForChatCompletion already put through the macros, by (what, text as it came): the later
    # steps that send them take these instead of running the macros again
    prepared: dict[tuple[str, str], str] = field(default_factory=dict)
    touched: bool = False  # a variable macro ran: text made here depends on the variables' state
    read_chat: bool = False  # a chat macro ran: text made here depends on the conversation
    read_outlet: bool = False  # an outlet macro ran: text made here depends on the world info activated
    steady: dict[str, str] = field(default_factory=dict)  # card fields that read the same every time (steady_field)
    all_steady: bool = False  # every field the legacy engine reads in each call is steady: a call runs none again
    persona_scanned: bool = False  # world info read the persona for an entry that matches card fields
    clock: Any = None  # the time macros' clock (macro_clock.MacroClock); None: they stay as written

    @property
    def group(self) -> str:
        return self.char  # a one-to-one chat: {{group}} is the character's name

    def prepared_as(self, what: str, text: str | None = None) -> str | None:
        """What preparePromptsForChatCompletion made of `what` (of that `text`, when given), or None."""
        for (kind, raw), value in self.prepared.items():
            if kind == what and (text is None or raw == text):
                return value
        return None

    def fork(self) -> MacroEnvironment:
        """A copy from which the same steps can run again (a second build): the variables and every list, set and
        dict the macros add to are its own; what they only read (the card, the chat, the clock) is shared."""
        forked = object.__new__(MacroEnvironment)  # every field as it is (copy.copy's protocol took 6 µs)
        forked.__dict__.update(self.__dict__)
        for name in _FORKED:
            setattr(forked, name, getattr(self, name).copy())
        local, global_ = self.variables.local, self.variables.global_  # a value may be a list or an object
        forked.variables = MacroVariables(copy.deepcopy(local) if local else {},
                                          copy.deepcopy(global_) if global_ else {})
        return forked

    def parse_examples(self, text: str) -> None:
        """parseMesExamples: a text with example blocks puts the context template's example separator (their
        heading) through the macros, once a call."""
        if text and text != "<START>":
            self.evaluate(DEFAULT_EXAMPLE_SEPARATOR)

    def start_generation(self) -> None:
        """What Generate() reads before anything else: the card fields, each through the macros once."""
        fields = self.read_card_fields()
        for name, key in _GENERATE_FIELDS:
            self.fields[name] = fields.get(key)

    def read_card_fields(self) -> _CardFields:
        """getCharacterCardFields(): every field through the macros, in its order (their variable macros run)."""
        fields = _CardFields(self)
        for name in _EAGER_ORDER:
            fields.get(name)
        return fields

    def read_scan_data(self) -> None:
        """What SillyTavern runs once a world book whose entries match card fields has been scanned: the character
        fields entries can match, through the macros (observed in its own runs: st-macros)."""
        self.evaluate(_SCAN_FIELDS)

    def read_persona_scan_data(self) -> None:
        """The persona description as an entry that matches card fields first reads it (once a generation)."""
        if not self.persona_scanned:
            self.persona_scanned = True
            _CardFields(self).get("persona")

    def view(self, *, requested: bool) -> Any:
        """The variables before and after for the result: when the request brought some or a macro used one."""
        from assembly.results import MacroVariablesView

        if not (self.touched or requested or self.variables_before != {"local": {}, "global": {}}):
            return None
        return MacroVariablesView(engine=self.engine, before=self.variables_before, after=self.variables.snapshot())

    def card_fields(self) -> _CardFields:
        fields = _CardFields(self)
        if self.engine == "legacy" and self.eager_fields:
            if self.all_steady:  # every field reads as it did: nothing runs again
                fields.done.update(self.steady)
                return fields
            for name in _EAGER_ORDER:  # the legacy engine's substituteParams reads every field first
                fields.get(name)
        return fields

    def base_chat_replace(self, text: str) -> str:
        """`baseChatReplace`: the macros without the card fields, carriage returns dropped."""
        if not text:
            return text
        return self.evaluate(text, card_fields=False).replace("\r", "")

    def steady_field(self, name: str, raw: str) -> str:
        """A card field through baseChatReplace. A field whose macros neither touch the variables nor read the
        chat or the outlets reads the same every time: it is worked out once (reads of the others run again)."""
        steady = self.steady
        if name in steady:
            return steady[name]
        text = raw.strip()
        if not text:  # nothing to substitute (a card leaves most fields empty)
            steady[name] = ""
            self.all_steady = steady.keys() >= _EAGER_NAMES
            return ""
        touched, read_chat, read_outlet = self.touched, self.read_chat, self.read_outlet
        self.touched = self.read_chat = self.read_outlet = False
        value = self.base_chat_replace(text)
        if not (self.touched or self.read_chat or self.read_outlet):
            steady[name] = value
            self.all_steady = steady.keys() >= _EAGER_NAMES
        self.touched, self.read_chat = self.touched or touched, self.read_chat or read_chat
        self.read_outlet = self.read_outlet or read_outlet
        return value

    def chat_range(self) -> str:
        self.read_chat = True
        return f"0-{len(self.chat) - 1}" if self.chat else ""

    def chat_value(self, name: str) -> str:
        self.read_chat = True
        chat = self.chat
        if name == "lastMessageId":
            return str(len(chat) - 1) if chat else ""
        if name == "firstIncludedMessageId":
            return ""
        roles = {"lastMessage": None, "lastUserMessage": "user", "lastCharMessage": "assistant"}[name]
        for message in reversed(chat):
            if roles is None or message.get("role") == roles:
                return message.get("content") or ""
        return ""

    def outlet(self, name: str) -> str:
        self.read_outlet = True
        if self.outlets is None:  # left for the placement step that fills outlets
            return "{{outlet::" + name + "}}"
        self.outlets_read.append(name.strip())
        return self.outlets.get(name.strip(), "")

    def inert(self, texts: Iterable[str]) -> bool:
        """Whether `substituteParams` over these texts could change nothing but its own output: none holds a macro but
        `{{user}}` and `{{char}}` (they read a name, nothing else), a `<USER>`-style token or (Macros 2.0) an escape,
        and the legacy engine's read of every card field would run no macro again. A pass made only for its effects
        may then be left out."""
        if self.engine == "legacy" and self.eager_fields and not self.all_steady:
            return False
        v2 = self.engine == "v2"
        for text in texts:
            if not text:
                continue
            if holds_macro(text):
                text = _NAMES.sub("", text)  # what is left may still hold a macro, or make one: then it is not inert
            if "<" in text or holds_macro(text) or (v2 and "\\" in text):
                return False
        return True

    def evaluate(self, text: str, *, original: str | None = None, card_fields: bool = True,
                 extra: dict[str, Callable[[], Any]] | None = None) -> str:
        """`substituteParams(text)`: `original` fills the first `{{original}}`; `card_fields` False is
        baseChatReplace's call (the card fields stay as written)."""
        if not text:
            return ""
        if "<" not in text and not holds_macro(text) and (self.engine != "v2" or "\\" not in text):
            # no macro, token or escape: the text stays as it came (the legacy engine's call still reads the card
            # fields first, which runs their macros again unless every one reads the same every time)
            if card_fields and self.engine != "v2" and not self.all_steady:
                self.card_fields()
            return text
        if self.engine == "v2":
            from assembly.sillytavern.macros_v2 import evaluate_v2

            return evaluate_v2(text, self, original=original, card_fields=card_fields, extra=extra or {})
        out = evaluate_legacy(text, LegacyCall(self, original, card_fields, extra or {}))
        if holds_macro(out):  # what the legacy engine leaves in the braces is what it does not know
            self.unsupported.extend(m.group(1) for m in _LEFT.finditer(out))
        return out


def generation_environment(*, engine: str, variables: Mapping[str, Any] | None, resources: Any, user: str, char: str,
                           chat: Sequence[Mapping[str, Any]], typed: int = 0,
                           generation: str = "normal", clock: Any = None) -> MacroEnvironment:
    """The macro environment of one builtin-st generation, from the request's resources and chat, with what
    Generate() substitutes first done: the `typed` last messages of `chat` (sent now: sendMessageAsUser stores
    them substituted, and the chat dicts are replaced by ones with that text) and the card fields."""
    character, persona = resources.character, resources.persona
    card: dict[str, str] = {}
    if character is not None:
        card = {"description": character.description, "personality": character.personality,
                "scenario": character.scenario, "mesExamples": character.mes_example,
                "system": character.system_prompt, "jailbreak": character.post_history_instructions,
                "version": character.character_version, "creatorNotes": character.creator_notes,
                "charDepthPrompt": character.depth_prompt.prompt if character.depth_prompt is not None else "",
                "greeting": character.first_mes}
    if persona is not None:
        card["persona"] = persona.description
    preset = resources.preset
    context = preset.openai_max_context if preset is not None else 0
    response = preset.openai_max_tokens if preset is not None else 0
    note = resources.author_note.content if resources.author_note is not None else ""
    # outlets read before this generation's world info is activated find none (a fresh chat's extension prompts)
    env = MacroEnvironment(user=user, char=char, engine=engine, card=card, outlets={},
                           variables=MacroVariables.from_request(copy.deepcopy(dict(variables)) if variables else None),
                           max_prompt=context - response, model=_model(preset), clock=clock)
    # the macros SillyTavern's own modules register (MacrosParser), which the legacy engine reads last
    # each handed the environment when called: a function holding the environment would make a reference cycle that
    # keeps the whole chat alive until the cyclic collector runs
    env.registered = {
        "maxContext": lambda _: context, "maxResponse": lambda _: response,
        "maxPromptTokens": lambda _: context - response, "lastGenerationType": lambda _: generation,
        "allChatRange": MacroEnvironment.chat_range, "notChar": lambda _: user, "authorsNote": lambda _: note,
        "charAuthorsNote": lambda _: "", "defaultAuthorsNote": lambda _: "",
    }
    env.variables_before = env.variables.snapshot()
    sent = list(chat)  # a message the macros change is replaced by a copy
    for index in range(len(sent) - typed, len(sent)) if typed else ():
        # sendMessageAsUser substitutes the text before the message joins the chat
        env.chat = sent[:index]  # the chat macros read each message's role and content (None as "")
        text = sent[index].get("content") or ""
        sent[index] = {**sent[index], "content": env.evaluate(text)}
        if text and not sent[index]["content"] and sent[index].get("id") is not None:
            env.emptied.add(sent[index]["id"])
    env.chat = list(sent)
    env.start_generation()  # getCharacterCardFields, then (after the character's note) the greeting
    if sent:  # Generate() substitutes the chat's first message (the greeting), the chat all there
        text = sent[0].get("content") or ""
        sent[0] = {**sent[0], "content": env.evaluate(text)}  # the chat macros still read it as it was
        if text and not sent[0]["content"] and sent[0].get("id") is not None:
            env.emptied.add(sent[0]["id"])
    env.sent = sent
    env.parse_examples(env.fields.get("examples") or "")  # then parseMesExamples on the card's examples
    return env


def _model(preset: Any) -> str:
    """getGeneratingModel for chat completion: the model field of the preset's source."""
    if preset is None:
        return ""
    fields = preset.other_fields
    source = fields.get("chat_completion_source") or "openai"
    if not isinstance(source, str):
        return ""  # a value SillyTavern never writes matches none of its sources: the model is ''
    key = {"makersuite": "google_model", "vertexai": "vertexai_model"}.get(source, f"{source}_model")
    value = fields.get(key)
    return value if isinstance(value, str) else ""


def macro_settings(req: Any, resources: Any) -> tuple[str, dict[str, Any] | None]:
    """The one rule for a builtin-st request's macros, chat or text completion: the request's macro engine when it
    names one, else the imported settings' (else legacy); the request's variables, the imported global ones when the
    request brings none."""
    engine = req.macro_engine
    if "macro_engine" not in req.model_fields_set and resources.macro_engine is not None:
        engine = resources.macro_engine
    variables = req.macro_variables
    if resources.global_variables and not (variables or {}).get("global"):
        variables = {"local": dict((variables or {}).get("local") or {}), "global": dict(resources.global_variables)}
    return engine, variables


def text_environment(req: Any, resources: Any, *, user: str, char: str) -> MacroEnvironment:
    """The macros of a text-completion generation: chat completion's engine and variables (`macro_settings`), one
    state for every text of the generation. Text completion reads the card fields and the chat itself."""
    engine, variables = macro_settings(req, resources)
    env = MacroEnvironment(user=user, char=char, engine=engine, clock=conversation_clock(req),
                           variables=MacroVariables.from_request(copy.deepcopy(dict(variables)) if variables else None))
    env.variables_before = env.variables.snapshot()
    return env


def request_environment(req: Any, resources: Any, char: str, chat: Sequence[Mapping[str, Any]],
                        typed: int) -> MacroEnvironment:
    """The environment of a builtin-st request (`chat`: the history and the input; `typed`: how many of its last
    messages the input holds): the request's macro engine and variables, else the imported settings'."""
    from assembly.sillytavern.regex import scripts_in_order

    engine, variables = macro_settings(req, resources)
    # typed text meets the user-input regex scripts before its macros: with scripts the chat steps do both
    sent_now = typed if req.generation.type == "normal" and not scripts_in_order(resources) else 0
    env = generation_environment(engine=engine, variables=variables, resources=resources, user=req.names.user,
                                 char=char, chat=chat, typed=sent_now, generation=req.generation.type,
                                 clock=request_clock(req.generation.now, chat))
    env.quiet_prompt = req.generation.quiet_prompt or ""
    env.reply_start = req.generation.start_reply_with or ""
    return env
