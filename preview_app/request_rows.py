"""The preview's request message rows as HTML, written in Python.

A template loop over a thousand messages, each with its parts table, took seconds to render; this builds the same
markup with plain string joins (tens of milliseconds). Every value that comes from the result (content, names, ids,
reasons) goes through `html.escape`, and the labels are translated once per page, not once per row. The markup and
its hooks (`data-index`, `data-role`, `data-delivery`, `data-history-status`, `data-part-id`, `data-lock-reason`) are
documented in web.md "Testable markup".
"""

from __future__ import annotations

from html import escape

from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from preview_app.result_display import Part, Row


def _labels() -> dict[str, str]:
    return {key: escape(value) for key, value in {
        "enters": _("enters history"), "not_kept": _("not kept"), "no_text": _("(no text)"),
        "tool_calls": _("Tool calls"), "answers": _("Answers tool call"), "trust": _("trust"),
        "item": _("Item"), "module": _("Module"), "trust_col": _("Trust"), "decision": _("Position decision"),
        "lock": _("Lock"), "original_role": _("Original role"), "tokens": _("Tokens"), "activation": _("activation"),
        "depth": _("depth"), "rule": _("rule"), "locked": _("locked"), "free": _("free"),
        "host_text": _("Host text: no module of the strategy made this message (for example the runtime-context "
                       "framing)."),
    }.items()}


def _e(value) -> str:
    return escape("" if value is None else str(value))


def _part_row(part: Part, labels: dict[str, str]) -> str:
    node = part.node or {}  # read the node's dict directly: this runs once per part of every message
    item = [f"<strong>{_e(part.label)}</strong><br><code class=\"muted part-id\">{_e(part.id)}</code>"]
    if node.get("activation"):
        item.append(f"<div class=\"activation\" data-activation>{labels['activation']}: "
                    f"{_e(node['activation'])}</div>")
    depth = node.get("depth") if node.get("depth") is not None else node.get("requested_depth")
    if depth is not None:
        item.append(f"<div class=\"muted small\">{labels['depth']} {_e(depth)}</div>")
    module = _e(node.get("module") or "—")
    if part.rule_differs:
        module += f"<br><span class=\"muted small\">{labels['rule']} {_e(node.get('rule_id'))}</span>"
    decision = "—"
    if node.get("position_decision"):
        decision = (f"<code>{_e(node['position_decision'])}</code><br>"
                    f"<span class=\"muted small\">{_e(part.decision_words)}</span>")
    if node.get("locked"):
        lock = (f"<span class=\"lock\" data-lock-reason=\"{_e(node.get('lock_reason'))}\"><span class=\"lock-badge\">"
                f"{labels['locked']}</span> {_e(part.lock_words)}</span>")
    else:
        lock = f"<span class=\"muted\">{labels['free']}</span>"
    if part.role_changed:
        role = f"<span class=\"changed\">{_e(node.get('original_role'))} → {_e(node.get('role'))}</span>"
    else:
        role = _e(node.get("original_role") or "—")
    tokens = "—" if node.get("tokens") is None else _e(node["tokens"])
    return (f"<tr data-part-id=\"{_e(part.id)}\" data-module=\"{_e(node.get('module'))}\">"
            f"<td>{''.join(item)}</td><td class=\"nowrap\">{module}</td>"
            f"<td class=\"nowrap\" title=\"{_e(part.trust_words)}\">{_e(node.get('trust') or '—')}</td>"
            f"<td>{decision}</td><td>{lock}</td><td class=\"nowrap\">{role}</td><td class=\"num\">{tokens}</td></tr>")


def _parts_label(count: int, labels: dict[str, str]) -> str:
    key = f"parts:{count}"  # most rows have one part: translate each count once per page
    if key not in labels:
        labels[key] = escape(ngettext("%(n)s part", "%(n)s parts", count) % {"n": count})
    return labels[key]


def _parts(row: Row, labels: dict[str, str]) -> str:
    count = len(row.parts)
    summary = f"{_parts_label(count, labels)} · {_e(row.history_words)} · {labels['trust']}: {_e(row.trust)}"
    if row.parts:
        head = "".join(f"<th scope=\"col\"{cls}>{labels[key]}</th>" for key, cls in (
            ("item", " class=\"w-item\""), ("module", ""), ("trust_col", ""), ("decision", ""),
            ("lock", " class=\"w-lock\""), ("original_role", ""), ("tokens", " class=\"num\"")))
        body = "".join(_part_row(part, labels) for part in row.parts)
        inner = f"<table class=\"parts-table\"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    else:
        inner = f"<p class=\"muted small\">{labels['host_text']}</p>"
    return (f"<details class=\"parts\" data-parts-for=\"{row.index}\"><summary>{summary}</summary>{inner}"
            f"</details>")


def _content(row: Row, labels: dict[str, str]) -> str:
    content = row.content or ""
    if row.long:
        more = _e(_("show all %(n)s characters") % {"n": len(content)})
        html = (f"<details class=\"content-fold\"><summary><span class=\"excerpt\">{_e(row.excerpt)}</span> "
                f"<span class=\"muted\">{more}</span></summary><pre class=\"content\">{_e(content)}</pre></details>")
    elif content:
        html = f"<pre class=\"content\">{_e(content)}</pre>"
    else:
        html = f"<p class=\"muted empty\">{labels['no_text']}</p>"
    if row.tool_calls_json:
        html += (f"<details class=\"tool\"><summary>{labels['tool_calls']}</summary>"
                 f"<pre class=\"content\">{_e(row.tool_calls_json)}</pre></details>")
    if row.tool_call_id:
        html += (f"<p class=\"tool small\"><span class=\"muted\">{labels['answers']}:</span> "
                 f"<code>{_e(row.tool_call_id)}</code></p>")
    return html


def _row(row: Row, labels: dict[str, str]) -> str:
    role, status = _e(row.role), _e(row.history_status)
    name = f" <span class=\"muted\">{_e(row.name)}</span>" if row.name else ""
    enters = (f"<span class=\"enters yes\">{labels['enters']}</span>" if row.enters_history
              else f"<span class=\"enters no\">{labels['not_kept']}</span>")
    return (
        f"<tbody class=\"msg role-{role}\" id=\"msg-{row.index}\" data-index=\"{row.index}\" data-role=\"{role}\" "
        f"data-delivery=\"{_e(row.delivery)}\" data-region=\"{_e(row.region)}\" data-history-status=\"{status}\" "
        f"data-enters-history=\"{'true' if row.enters_history else 'false'}\">"
        f"<tr class=\"msg-head\"><td class=\"num\">{row.index}</td>"
        f"<td><span class=\"role-badge role-{role}\">{role}</span>{name}</td>"
        f"<td title=\"{_e(row.delivery_words)}\">{_e(row.delivery)}</td><td>{_e(row.region)}</td>"
        f"<td class=\"history-entry\" title=\"{_e(row.history_words)}\">{enters} "
        f"<span class=\"status status-{status}\">{status}</span></td><td class=\"num\">{_e(row.tokens)}</td></tr>"
        f"<tr class=\"msg-body\"><td></td><td colspan=\"5\">{_content(row, labels)}{_parts(row, labels)}</td></tr>"
        f"</tbody>\n")


def render_rows(rows: list[Row]) -> SafeString:
    """The `<tbody>` of every request message (every value escaped above)."""
    labels = _labels()
    return mark_safe("".join(_row(row, labels) for row in rows))  # every value in it went through escape()
