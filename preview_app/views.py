from django.shortcuts import render

from assembly import get_placement_capabilities
from preview_app.models import GoldenSnapshot, Session
from strategies_app.models import Character, Persona, Preset, Strategy, WorldBook


def home(request):
    """Landing page after login: what the studio holds (strategies, sessions, resources) and the positions the
    engine supports."""
    return render(request, "home.html", {
        "positions": get_placement_capabilities(_FULL_LAYOUT)["positions"],
        "strategies": Strategy.objects.filter(visible=True).select_related("owner"),
        "sessions": Session.objects.select_related("applied_strategy", "owner"),
        "resources": [("Presets", Preset.objects.all()), ("Characters", Character.objects.all()),
                      ("Personas", Persona.objects.all()), ("World books", WorldBook.objects.all())],
        "golden_count": GoldenSnapshot.objects.count(),
        "roles": sorted(request.user.groups.values_list("name", flat=True)),
    })


# A layout that declares every anchor, so the home page can list all placement positions the engine knows.
_FULL_LAYOUT = {
    "character": {"start": 0, "end": 1},
    "examples": {"start": 1, "end": 2},
    "conversation": {"message_indices": [], "empty_index": 2},
    "author_note": 2,
    "outlets": {"example": 2},
}
