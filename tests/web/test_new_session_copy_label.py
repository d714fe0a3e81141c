"""The new-session form's radios label a copy of a built-in with "(copy)" in the page's language."""

from html import unescape

import pytest

from assembly.catalogue import BUILTIN_NAMES
from strategies_app import services as strategy_services
from strategies_app.models import Strategy
from tests.web.conftest import client_for

ROLES = BUILTIN_NAMES["builtin-native-roles"]


@pytest.mark.parametrize(("language", "label", "hidden"), [
    ("en", f"{ROLES['en']} (copy): your studio's strategy, its latest saved revision.", "（副本）"),
    ("zh-hans", f"{ROLES['zh']}（副本）", "(copy)"),
])
def test_a_copy_is_labelled_in_the_page_language(users, language, label, hidden):
    copy = strategy_services.strategy_copy(user=users["designer"],
                                           source=Strategy.objects.get(slug="builtin-native-roles"))
    strategy_services.revision_save(strategy=copy, user=users["designer"], note="mine")
    client = client_for(users["designer"])
    client.cookies["django_language"] = language
    html = unescape(client.get("/sessions/new/").content.decode())
    radio = html[html.index(f'value="{copy.slug}"'):]
    radio = radio[:radio.index("</label>")]
    assert label in radio
    assert hidden not in radio
