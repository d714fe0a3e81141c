from django.shortcuts import render

from assembly import get_placement_capabilities


def home(request):
    """Landing page after login: what the studio offers today."""
    return render(request, "home.html", {"positions": get_placement_capabilities(_FULL_LAYOUT)["positions"]})


# A layout that declares every anchor, so the home page can list all placement positions the engine knows.
_FULL_LAYOUT = {
    "character": {"start": 0, "end": 1},
    "examples": {"start": 1, "end": 2},
    "conversation": {"message_indices": [], "empty_index": 2},
    "author_note": 2,
    "outlets": {"example": 2},
}
