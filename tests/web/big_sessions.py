"""A generated long session for the windowing tests, built with bulk_create as `bench/web.py` does:
5,000 messages through the service layer would take minutes."""

from preview_app import services as session_services
from preview_app.models import SessionEvent
from strategies_app import services as strategy_services
from strategies_app.models import Preset, Strategy

BIG = 5_000
PRESET = {"prompts": [
    {"identifier": "main", "role": "system", "content": "Be the narrator."},
    {"identifier": "chatHistory", "marker": True},
    {"identifier": "jailbreak", "role": "system", "content": "Stay brief."}],
    "openai_max_context": 10_000_000, "openai_max_tokens": 300}  # room for the whole history: nothing cut


def big_session(user, size: int = BIG, name: str = "Long chat"):
    """A session of `size` history messages with builtin-st applied (every message plain native history)."""
    preset = strategy_services.preset_import(user=user, data=PRESET, name=f"{name} preset")
    session = session_services.session_create(user=user, name=name, host={"core_available": True},
                                              current_input="And then?", preset=Preset.objects.get(pk=preset.id))
    SessionEvent.objects.bulk_create(
        SessionEvent(session=session, seq=i + 1, message_id=f"m{i}", role="user" if i % 2 == 0 else "assistant",
                     content=f"Message {i}: the road bends toward the river and the lanterns flicker.")
        for i in range(size))
    session_services.strategy_apply(session=session, strategy=Strategy.objects.get(slug="builtin-st"))
    session.refresh_from_db()
    return session
