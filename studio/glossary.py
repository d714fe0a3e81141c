"""The glossary page: the words of each kind of work, one line each. SillyTavern's words describe a SillyTavern
strategy and its sessions; dsh's words (delivery, pre-step, runtime context, native system, ...) only matter where the
standard or advanced backend is in play. Pages link a term here (`term` filter) with its line as the hover text."""

from __future__ import annotations

from dataclasses import dataclass

from django.shortcuts import render
from django.utils.html import format_html
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_GET


@dataclass(frozen=True)
class Term:
    slug: str
    word: str
    line: str


SILLYTAVERN_TERMS = (
    Term("prompt-manager", _("Prompt Manager"), _("SillyTavern's list of a preset's prompts, in the order they are "
                                                  "sent, each switched on or off, with its role and position.")),
    Term("marker", _("marker"), _("A prompt of the Prompt Manager that holds no text of its own but a place: chat "
                                  "history, world info before/after, character description, and so on.")),
    Term("in-chat-depth", _("in-chat @ depth"), _("A prompt inserted inside the chat history, that many messages "
                                                  "from its end (depth 0 is after the last message).")),
    Term("authors-note", _("Author's Note"), _("A chat's own note, inserted at a depth or position on every turn "
                                               "(or every n turns).")),
    Term("world-info", _("world info"), _("Entries of a world book (lorebook) sent when their keywords appear in "
                                          "the chat, at the position each entry names.")),
    Term("characters-note", _("character's note"), _("The card's depth prompt: text from the character card "
                                                     "inserted at a depth in the chat.")),
)

DSH_TERMS = (
    Term("backend", _("standard / advanced backend"), _("How a dsh strategy is sent: the standard backend (native) "
                                                        "sends plain chat messages; the advanced backend (core) "
                                                        "also records what it sent in the durable history.")),
    Term("delivery", _("delivery"), _("How an item reaches the model in the standard backend: in the history, as "
                                      "runtime context, or as a pre-step message.")),
    Term("pre-step", _("pre-step message"), _("A message the host sends before the user's turn and keeps in the "
                                              "durable history; it is the host's, not something the user typed.")),
    Term("runtime-context", _("runtime context"), _("Facts about the host (working directory, sandbox, approval "
                                                    "policy) that dsh sends each turn as a snapshot.")),
    Term("native-system", _("native system"), _("The host's own system prompt, sent as the first system message "
                                                 "before anything the strategy adds.")),
    Term("lifetime", _("lifetime"), _("How long an item lasts: for one request, or as a snapshot the host records "
                                      "and re-sends only when it changes.")),
    Term("trust", _("trust"), _("Who wrote a piece of text (host, operator, end user, tool output): the engine never "
                                "lets less trusted text become a system message.")),
)

TERMS = {term.slug: term for term in SILLYTAVERN_TERMS + DSH_TERMS}


def term_link(slug: str, shown: str | None = None) -> str:
    """`shown` (default: the term's word) linked to its glossary line, with the line as the hover text."""
    term = TERMS[slug]
    return format_html('<a class="term" href="/glossary/#{}" title="{}">{}</a>', slug, term.line,
                       shown if shown is not None else term.word)


@require_GET
def glossary(request):
    return render(request, "glossary.html", {"groups": [
        (_("SillyTavern's words"), _("Used for SillyTavern strategies (builtin-st and its copies) and their "
                                     "sessions."), SILLYTAVERN_TERMS),
        (_("dsh's words"), _("Used only where the standard or advanced backend is in play."), DSH_TERMS)]})
