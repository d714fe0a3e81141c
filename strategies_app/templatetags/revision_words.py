"""`{{ revision.note|revision_note }}`: a revision's note in the page's language (see strategies_app.revision_notes)."""

from django import template

from strategies_app.revision_notes import revision_note as note_shown

register = template.Library()


@register.filter
def revision_note(note: str | None) -> str:
    return note_shown(note)
