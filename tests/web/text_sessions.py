"""A small text-completion session for the text tests: Ada's card with one example dialogue, the user Sam, a
two-message chat and a typed line, the built-in ChatML instruct template, the built-in "Chat" context template and
the built-in "Role-play" system prompt."""

from preview_app import services as session_services
from strategies_app import services as strategy_services
from strategies_app.models import Character, Persona, TextTemplate

CARD = {"spec": "chara_card_v2", "spec_version": "2.0",
        "data": {"name": "Ada", "description": "An engineer.", "personality": "curious",
                 "mes_example": "<START>\n{{user}}: What is this?\n{{char}}: A loom."}}


def builtin(kind, name):
    return TextTemplate.objects.get(kind=kind, name=name, builtin=True)


def make_text_session(user, admin, *, name="Ada at the loom", **settings):
    character = strategy_services.character_import(user=admin, data=CARD)
    persona = strategy_services.persona_import(user=admin, data={"name": "Sam", "description": "A visitor."})
    session = session_services.session_create(
        user=user, name=name, character=Character.objects.get(pk=character.id),
        persona=Persona.objects.get(pk=persona.id), current_input="Show me the cards.")
    session_services.event_append(session=session, role="assistant", content="Welcome to the mill.", name="Ada")
    session_services.event_append(session=session, role="user", content="Hello Ada.", name="Sam")
    return session_services.session_text_update(
        session=session, completion="text", instruct_template=builtin("instruct", "ChatML"),
        context_template=builtin("context", "Chat"), sysprompt_template=builtin("sysprompt", "Role-play"),
        instruct_enabled=True, text_settings=settings)
