"""A SillyTavern session whose preset is one Main prompt and the chat history: what a test of a macro needs."""

from preview_app import services
from strategies_app import services as strategy_services
from strategies_app.models import Preset, Strategy


def main_prompt_session(users, *, content, name):
    prompts = [{"identifier": "main", "role": "system", "content": content},
               {"identifier": "chatHistory", "marker": True}]
    preset = strategy_services.preset_import(user=users["admin"], data={"prompts": prompts}, name=name)
    return services.session_create(user=users["designer"], name=name, host={"core_available": True},
                                   preset=Preset.objects.get(pk=preset.id),
                                   strategy=Strategy.objects.get(slug="builtin-st"))
