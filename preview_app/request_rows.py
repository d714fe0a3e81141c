"""The preview's request message rows as HTML, written in Python.

A template loop over a thousand messages, each with its parts table, took seconds to render; this builds the same
markup with plain string joins (tens of milliseconds). Every value that comes from the result (content, names, ids,
reasons) goes through `html.escape`, and the labels are translated once per page, not once per row. The markup and
its hooks (`data-index`, `data-role`, `data-delivery`, `data-history-status`, `data-part-id`, `data-lock-reason`) are
documented in web.md "Testable markup".
"""

from __future__ import annotations

from html import escape
from typing import Any

from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from preview_app.result_display import Part, Row
from studio.glossary import term_link
from studio.history_window import RANGE_ROWS, CollapsedRun, Segment, run_words
from studio.wording import engine_word, label_colon, node_name


def _labels() -> dict[str, str]:
    return {key: escape(value) for key, value in {
        "no_text": _("(no text)"), "colon": label_colon(),
        "tool_calls": _("Tool calls"), "answers": _("Answers tool call"), "trust": _("trust"), "host_record": _("host record"),
        "item": _("Item"), "module": _("Module"), "trust_col": _("Trust"), "decision": _("Position decision"),
        "lock": _("Lock"), "original_role": _("Original role"), "tokens": _("Tokens"), "activation": _("activation"),
        "depth": _("depth"), "rule": _("rule"), "locked": _("locked"), "free": _("free"),
        "host_text": _("Host text: no module of the strategy made this message (for example the runtime-context "
                       "framing)."),
        "regex_before": _("Before"), "regex_after": _("After"),
        "st_chat": _("chat message"), "st_input": _("the user's input"), "st_host": _("host text"),
        "st_marker": _("Chat History marker"), "st_relative": _("relative (Prompt Manager order)"),
    }.items()}


def _e(value) -> str:
    return escape("" if value is None else str(value))


class _Escaped(dict):
    """Escaped short values, worked out once per page: roles, statuses, modules and their words repeat on every row.
    Long or unique values (content, ids) are escaped directly."""

    def __missing__(self, value) -> str:
        text = escape("" if value is None else str(value))
        if len(self) < 4096 and not isinstance(value, bool):  # True == 1 as a key: never cache booleans
            self[value] = text
        return text

    def word(self, vocabulary: str, code) -> str:
        """The engine code in words (`studio.wording.ENGINE_WORDS`), escaped, once per page; "—" for none."""
        key = (vocabulary, code)
        if key not in self:
            self[key] = escape(engine_word(vocabulary, code) or "—")
        return self[key]


def _safe_or_escaped(words: str, short: _Escaped) -> str:
    """Words a presenter made markup of (a lock label with the slot's name as code) as they are; plain words
    escaped."""
    return words if isinstance(words, SafeString) else short[words]


def _part_row(part: Part, labels: dict[str, str], short: _Escaped) -> str:
    node = part.node  # None: a part the result has no node for

    def get(name: str) -> Any:
        return getattr(node, name, None)

    part_id = _e(part.id)
    item = [f"<strong>{_e(part.label)}</strong>" + (f"<br><code class=\"muted part-id\">{part_id}</code>"
                                                    if part.shown_id else "")]
    if get("activation"):
        item.append(f"<div class=\"activation\" data-activation>{labels['activation']}{labels['colon']}"
                    f"{_e(part.activation_words)}</div>")
    depth = get("depth") if get("depth") is not None else get("requested_depth")
    if depth is not None:
        item.append(f"<div class=\"muted small\">{labels['depth']} {short[depth]}</div>")
    module_name = get("module")
    module = short.word("module", module_name)
    if node is not None and get("rule_id") != module_name:
        module += f"<br><span class=\"muted small\">{labels['rule']} {short[get('rule_id')]}</span>"
    decision = "—"
    if get("position_decision"):
        decision = (f"<code>{short[get('position_decision')]}</code><br>"
                    f"<span class=\"muted small\">{short[part.decision_words]}</span>")
    if get("locked"):
        lock = (f"<span class=\"lock\" data-lock-reason=\"{short[get('lock_reason')]}\"><span class=\"lock-badge\">"
                f"{labels['locked']}</span> {_safe_or_escaped(part.lock_words, short)}</span>")
    else:
        lock = labels["free_span"]
    original_role = get("original_role")
    if node is not None and original_role not in (None, get("role")):
        role = f"<span class=\"changed\">{short.word('role', original_role)} → {short.word('role', get('role'))}</span>"
    else:
        role = short.word("role", original_role)
    tokens = "—" if get("tokens") is None else short[get("tokens")]
    trust = get("trust")
    return (f"<tr data-part-id=\"{part_id}\" data-module=\"{short[module_name]}\">"
            f"<td>{''.join(item)}</td><td class=\"nowrap\">{module}</td>"
            f"<td class=\"nowrap\" title=\"{short[part.trust_words]}\">{short.word('trust', trust)}</td>"
            f"<td>{decision}</td><td>{lock}</td><td class=\"nowrap\">{role}</td><td class=\"num\">{tokens}</td></tr>")


def _parts_label(count: int, labels: dict[str, str]) -> str:
    key = f"parts:{count}"  # most rows have one part: translate each count once per page
    if key not in labels:
        labels[key] = escape(ngettext("%(n)s part", "%(n)s parts", count) % {"n": count})
    return labels[key]


def _parts(row: Row, labels: dict[str, str], short: _Escaped, sillytavern: bool = False) -> str:
    count = len(row.parts)
    message = row.message
    kept = f" · {short[row.history_words]}" if row.history_words else ""  # SillyTavern has no word for some
    if row.host_kind:  # a host record (a pre-step copy, ...) is not the user's turn, whatever its role
        summary = (f"{_parts_label(count, labels)}{kept} · {labels['host_record']}{labels['colon']}"
                   f"{_e(row.host_record_words)}")
    elif sillytavern:  # SillyTavern's words on SillyTavern work: trust is dsh's (the parts table still has it)
        summary = f"{_parts_label(count, labels)}{kept}"
    else:
        summary = (f"{_parts_label(count, labels)} · {short[row.history_words]} · {labels['trust_term']}"
                   f"{labels['colon']}{short.word('trust', message.trust)}")
    if row.parts:
        body = "".join(_part_row(part, labels, short) for part in row.parts)
        inner = f"<table class=\"parts-table\"><thead><tr>{labels['parts_head']}</tr></thead><tbody>{body}</tbody></table>"
    else:
        inner = f"<p class=\"muted small\">{labels['host_text']}</p>"
    return (f"<details class=\"parts\" data-parts-for=\"{row.index}\"><summary>{summary}</summary>{inner}"
            f"</details>")


def _content(row: Row, labels: dict[str, str]) -> str:
    message = row.message
    content = message.content
    if row.long:
        more = _e(_("show all %(n)s characters") % {"n": len(content)})
        html = (f"<details class=\"content-fold\"><summary><span class=\"excerpt\">{_e(row.excerpt)}</span> "
                f"<span class=\"muted\">{more}</span></summary><pre class=\"content\">{_e(content)}</pre></details>")
    elif content:
        html = f"<pre class=\"content\">{_e(content)}</pre>"
    else:
        html = f"<p class=\"muted empty\">{labels['no_text']}</p>"
    if message.tool_calls:
        html += (f"<details class=\"tool\"><summary>{labels['tool_calls']}</summary>"
                 f"<pre class=\"content\">{_e(row.tool_calls_json)}</pre></details>")
    if message.tool_call_id:
        html += (f"<p class=\"tool small\"><span class=\"muted\">{labels['answers']}{labels['colon']}</span>"
                 f"<code>{_e(message.tool_call_id)}</code></p>")
    return html


def _regex_changes(row: Row, labels: dict[str, str]) -> str:
    """Each regex script that changed a part of this message (builtin-st), named; before and after on request."""
    out = []
    for part in row.parts:
        for change in part.regex_changes:
            summary = _e(_("Regex script “%(script)s” changed %(part)s") % {
                "script": change.script or _("(unnamed)"), "part": part.label})
            out.append(f"<details class=\"regex-change\" data-regex-script=\"{_e(change.script)}\" "
                       f"data-part-id=\"{_e(part.id)}\"><summary>{summary}</summary><div class=\"regex-diff\">"
                       f"<div><span class=\"muted small\">{labels['regex_before']}</span>"
                       f"<pre class=\"content before\">{_e(change.before)}</pre></div>"
                       f"<div><span class=\"muted small\">{labels['regex_after']}</span>"
                       f"<pre class=\"content after\">{_e(change.after)}</pre></div></div></details>")
    return "".join(out)


_CHAT_MODULES = ("history", "input")  # the messages SillyTavern places at the Chat History marker


def _st_source(row: Row, labels: dict[str, str], short: _Escaped) -> str:
    """Where a SillyTavern request message comes from, in SillyTavern's words: the Prompt Manager prompt (its name
    and identifier), a chat message, the user's input, or the module (world info, Author's Note, ...)."""
    out: list[str] = []
    for part in row.parts[:_ST_SOURCES]:
        node = part.node
        module = getattr(node, "module", None)
        if module == "preset":
            identifier, name = node.field or node.position_id, node_name(node.name)
            code = f"<code class=\"muted\" data-prompt-identifier>{_e(identifier)}</code>"
            out.append(code if name in ("", identifier) else f"{_e(name)} {code}")  # unnamed: its identifier once
        elif module == "history":
            out.append(labels["st_chat"])
        elif module == "input":
            out.append(labels["st_input"])
        elif node is not None:
            out.append(short.word("module", module))
        else:
            out.append(labels["st_host"])
    if len(row.parts) > _ST_SOURCES:
        out.append("…")
    return "<br>".join(dict.fromkeys(out)) or "—"


_ST_SOURCES = 4  # a message joined from more pieces lists the first few; its parts table lists them all


def _st_position(row: Row, labels: dict[str, str], short: _Escaped) -> str:
    """SillyTavern's position of a request message: in-chat @ depth N, at the Chat History marker, or relative
    (in the Prompt Manager's order)."""
    for part in row.parts:
        depth = getattr(part.node, "depth", None)
        if depth is not None:
            key = ("st_depth", depth)
            if key not in short:
                short[key] = escape(_("in-chat @ depth %(depth)s") % {"depth": depth})
            return short[key]
    if any(getattr(part.node, "module", None) in _CHAT_MODULES for part in row.parts):
        return labels["st_marker"]
    return labels["st_relative"]


def _row(row: Row, labels: dict[str, str], short: _Escaped, sillytavern: bool = False) -> str:
    message = row.message
    role, status, delivery = short[message.role], short[message.history_status], short[message.delivery]
    name = f" <span class=\"muted\">{_e(message.name)}</span>" if message.name else ""
    enters_history = message.enters_history
    if sillytavern:  # SillyTavern's columns: the markup (data-delivery, data-region, ...) stays on the row
        columns = (f"<td class=\"st-source\">{_st_source(row, labels, short)}</td>"
                   f"<td class=\"st-position\">{_st_position(row, labels, short)}</td>")
    else:
        columns = (f"<td title=\"{short[row.delivery_words]}\">{short.word('delivery', message.delivery)}</td>"
                   f"<td>{short.word('region', message.region)}</td>"
                   f"<td class=\"history-entry\"><span class=\"entry status-{status}\">{short[row.history_words]}</span></td>")
    return (
        f"<tbody class=\"msg role-{role}\" id=\"msg-{row.index}\" data-index=\"{row.index}\" data-role=\"{role}\" "
        f"data-delivery=\"{delivery}\" data-region=\"{short[message.region]}\" data-history-status=\"{status}\" "
        f"data-enters-history=\"{'true' if enters_history else 'false'}\">"
        f"<tr class=\"msg-head\"><td class=\"num\">{row.index}</td>"
        f"<td><span class=\"role-badge role-{role}\">{short.word('role', message.role)}</span>{name}</td>"
        f"{columns}<td class=\"num\">{short[message.tokens]}</td></tr>"
        f"<tr class=\"msg-body\"><td></td><td colspan=\"{_span(sillytavern)}\">{_content(row, labels)}"
        f"{_regex_changes(row, labels)}{_parts(row, labels, short, sillytavern)}</td>"
        f"</tr></tbody>\n")


def _span(sillytavern: bool) -> int:
    """The columns after "#": role, delivery, region, history entry, tokens; SillyTavern's role, source, position,
    tokens."""
    return 4 if sillytavern else 5


def _page_labels() -> tuple[dict[str, str], _Escaped]:
    labels = _labels()
    labels["parts_head"] = "".join(f"<th scope=\"col\"{cls}>{labels[key]}</th>" for key, cls in (
        ("item", " class=\"w-item\""), ("module", ""), ("trust_col", ""), ("decision", ""),
        ("lock", " class=\"w-lock\""), ("original_role", ""), ("tokens", " class=\"num\"")))
    labels["free_span"] = f"<span class=\"muted\">{labels['free']}</span>"
    labels["trust_term"] = term_link("trust", labels["trust"])  # the word linked to the glossary, its line on hover
    return labels, _Escaped()


def render_rows(rows: list[Row], sillytavern: bool = False) -> SafeString:
    """The `<tbody>` of every request message (every value escaped above)."""
    labels, short = _page_labels()
    return mark_safe("".join(_row(row, labels, short, sillytavern) for row in rows))  # every value in it went through escape()


def _collapsed(run: CollapsedRun, href: str, sillytavern: bool = False) -> str:
    url = _e(href)
    hint = _("show them") if run.count <= RANGE_ROWS else _("show the first %(n)s") % {"n": RANGE_ROWS}
    return (f"<tbody class=\"collapsed-run\" id=\"run-{run.range}\" data-collapsed-range=\"{run.range}\" "
            f"data-count=\"{run.count}\" data-tokens=\"{run.tokens}\"><tr><td class=\"num muted\">…</td>"
            f"<td colspan=\"{_span(sillytavern)}\"><a class=\"expand-run\" href=\"{url}\" hx-get=\"{url}\" hx-target=\"closest tbody\" "
            f"hx-swap=\"outerHTML\">{_e(run_words(run))}</a> <span class=\"muted small\">{_e(hint)}</span>"
            f"</td></tr></tbody>\n")


def render_window(rows: list[Row], segments: list[Segment], href, sillytavern: bool = False) -> SafeString:
    """The `<tbody>`s of a windowed history: each shown message as in `render_rows`, each collapsed run one row
    whose link (`href(run)`, a real URL; htmx swaps the answer in place) shows that range."""
    labels, short = _page_labels()
    out = [_collapsed(s, href(s), sillytavern) if isinstance(s, CollapsedRun) else _row(rows[s.index], labels, short, sillytavern)
           for s in segments]
    return mark_safe("".join(out))  # every value in it went through escape()
