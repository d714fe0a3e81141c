"""SillyTavern 1.18's text-completion request (`"api": "text"`, text-completion.md): the request read, the parts
gathered (assembly.sillytavern.text_gather), the prompt built (assembly.sillytavern.text_prompt), the stop strings
(assembly.sillytavern.text_stop), as an AssemblyResult whose `request` carries `prompt`, `stop` and `spans`, and whose
`world_info` is the world-info activation as for chat completion (with `world_state`, the timed effects after it)."""

from __future__ import annotations

from typing import Any

from assembly.errors import AssemblyError
from assembly.reading import ImportInvalid
from assembly.request import parse_request, refuse_unsafe
from assembly.results import AssemblyResult, Diagnostic, LayoutView, RequestView, StrategyRef, TextSpan, TokenSummary
from assembly.sillytavern.macro_environment import text_environment
from assembly.sillytavern.resource_set import normalize_resources
from assembly.sillytavern.text_budget import ST_ESTIMATE, estimate_tokens
from assembly.sillytavern.text_gather import gather
from assembly.sillytavern.text_prompt import build_prompt
from assembly.sillytavern.text_stop import stop_strings
from assembly.sillytavern.text_templates import read_custom_stopping_strings, read_text_templates

TEXT_RESOURCES = ("context_template", "instruct_template", "system_prompt", "text_settings")
_TEXT_GENERATIONS = ("normal", "continue", "impersonate")


def _read(request: dict[str, Any]) -> tuple[Any, Any, Any]:
    if request.get("strategy", "builtin-st") != "builtin-st":
        raise AssemblyError("ASSEMBLY_REQUEST_INVALID", "strategy: text completion is built by builtin-st",
                            detail={"path": "strategy"})
    if request.get("tokenizer", ST_ESTIMATE) != ST_ESTIMATE:
        raise AssemblyError("ASSEMBLY_REQUEST_INVALID", "tokenizer: text completion counts with st-estimate",
                            detail={"path": "tokenizer"})
    raw = request.get("resources") or {}
    if not isinstance(raw, dict):
        raise AssemblyError("ASSEMBLY_REQUEST_INVALID", "resources: expected an object", detail={"path": "resources"})
    # parse_request sees only the shared resources: the text ones get its check here, under their own paths
    refuse_unsafe({"resources": {k: v for k, v in raw.items() if k in TEXT_RESOURCES}})
    shared = {k: v for k, v in raw.items() if k not in TEXT_RESOURCES}
    req = parse_request({**{k: v for k, v in request.items() if k not in ("api", "tokenizer")}, "resources": shared})
    if req.generation.type not in _TEXT_GENERATIONS:
        raise AssemblyError("ASSEMBLY_REQUEST_INVALID",
                            f"generation.type: text completion builds {', '.join(_TEXT_GENERATIONS)}",
                            detail={"path": "generation.type"})
    try:
        resources = normalize_resources(shared)
    except ImportInvalid as exc:
        raise AssemblyError("IMPORT_INVALID", f"resources.{exc.path}: expected {exc.expected}", status=exc.status,
                            detail={"path": f"resources.{exc.path}"}) from None
    return req, resources, read_text_templates(raw)


def assemble_text(request: dict[str, Any]) -> AssemblyResult:
    """The text-completion prompt and stop strings of a `"api": "text"` request."""
    req, resources, templates = _read(request)
    history = [m.model_dump() for m in req.conversation.history]
    inputs = [m.model_dump() for m in req.conversation.input]
    messages = history + inputs
    user = req.names.user
    char = req.names.char or (resources.character.name if resources.character else "")
    generation = req.generation.type
    macros = text_environment(req, resources, user=user, char=char)
    parts = gather(templates, resources, messages, typed=len(inputs), user=user, char=char, generation=generation,
                   seed=req.generation.seed, turn=req.generation.turn or 0, macros=macros)
    prompt, spans = build_prompt(parts, templates, generation=generation, raw_chat=messages)
    continue_on_user = generation == "continue" and bool(messages) and messages[-1]["role"] == "user"
    stop = stop_strings(templates, user=user, char=char, impersonate=generation == "impersonate",
                        continue_on_user=continue_on_user, macros=macros)
    view = RequestView(messages=[], prompt=prompt, stop=stop,
                       spans=[TextSpan(source=s.source, text=s.text, tokens=estimate_tokens(s.text)) for s in spans])
    return AssemblyResult(
        backend="text", placement="st", strategy=StrategyRef(id="builtin-st", name="SillyTavern", revision="1.18"),
        request=view, nodes=[], diagnostics=[*_world_info_diagnostics(parts.world_info),
                                             *_stop_string_diagnostics(templates)], runtime_context_controls=[],
        placement_controls=[], positions=[], durable_events=[], tokens=_token_summary(view, templates.settings),
        layout=LayoutView(policy=None, slots=[], blocks=[]), world_info=parts.world_info,
        macro_variables=macros.view(requested=bool(req.macro_variables)))


def _world_info_diagnostics(activation: Any) -> list[Diagnostic]:
    """The regex keys world info skipped over their limits (ST_PATTERN_LIMIT), as chat completion lists them."""
    return [Diagnostic.of(d) for d in (activation.pattern_limits if activation is not None else ())]


def _stop_string_diagnostics(templates: Any) -> list[Diagnostic]:
    """Custom stop strings SillyTavern drops without a word (a value that is not a JSON array of strings), reported
    so the designer knows the stop list lacks them."""
    _strings, dropped = read_custom_stopping_strings(templates.settings["custom_stopping_strings"])
    if dropped is None:
        return []
    return [Diagnostic.of({"code": "TEXT_STOP_STRINGS_DROPPED", "field": "text_settings.custom_stopping_strings",
                           "dropped": dropped})]


def _token_summary(view: RequestView, settings: dict[str, Any]) -> TokenSummary:
    """The estimate of the whole prompt (with the padding, as SillyTavern checks it) against max context less the
    reply; `by_module`: the spans' tokens by the kind of source (story_string, example, message, ...)."""
    by_kind: dict[str, int] = {}
    for span in view.spans or ():
        kind = span.source.split(":", 1)[0].split("+", 1)[0]
        by_kind[kind] = by_kind.get(kind, 0) + span.tokens
    total = estimate_tokens(view.prompt or "", settings["token_padding"])
    window, reserve = settings["max_context"], settings["amount_gen"]
    return TokenSummary(total=total, by_module=by_kind, tokenizer=ST_ESTIMATE, exact=False, framing="text",
                        request_total=total, context_window=window, reply_reserve=reserve, window_source="preset",
                        fits=total <= window - reserve)
