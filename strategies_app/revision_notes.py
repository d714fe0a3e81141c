"""A revision's note as the page shows it: the note the reference data stores on each built-in's revision is an
English word ("built-in"); it stays stored as it is (revisions and exports are unchanged) and is translated here."""

from __future__ import annotations

from django.utils.translation import gettext as _

BUILTIN_NOTE = "built-in"  # what reference_data stores on a built-in's revision


def revision_note(note: str | None) -> str:
    """`note` in the page's language when it is the built-ins' stored note; any other note as its author wrote it."""
    return _("built-in") if note == BUILTIN_NOTE else (note or "")
