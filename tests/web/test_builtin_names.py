"""A built-in strategy has one name per language everywhere: pages, messages, the API (`name` in the request's
language, `names` with every language) and the `assemble` command. The names are the catalogue's own."""

import io
import json

from django.core.management import call_command

from tests.web.conftest import client_for

EN, ZH = "Preset slots first (standard)", "预设插槽优先（标准）"
BOTH = f"{ZH} / {EN}"


def test_the_api_lists_a_builtin_in_the_requests_language_with_both_names(users):
    client = client_for(users["qa"])
    rows = {row["id"]: row for row in client.get("/api/strategies").json()}
    assert rows["builtin-native-slots"]["name"] == EN
    assert rows["builtin-native-slots"]["names"] == {"en": EN, "zh-hans": ZH}
    rows = {row["id"]: row for row in client.get("/api/strategies", HTTP_ACCEPT_LANGUAGE="zh-hans").json()}
    assert rows["builtin-native-slots"]["name"] == ZH
    detail = client.get("/api/strategies/builtin-native-slots").json()
    assert detail["name"] == EN and detail["names"]["zh-hans"] == ZH


def test_a_preview_answer_names_its_strategy_once(users):
    client = client_for(users["qa"])
    body = client.post("/api/assemble", {"strategy": "builtin-native-slots", "resources": {},
                                         "conversation": {"history": [], "input": []}},
                       content_type="application/json").json()
    assert body["strategy"]["name"] == EN and body["strategy"]["names"] == {"en": EN, "zh-hans": ZH}


def test_the_copy_message_names_the_builtin_in_one_language(users):
    client = client_for(users["designer"])
    page = client.post("/strategies/builtin-native-slots/copy/", {"name": ""}, follow=True)
    flash = page.content.decode().split('<ul class="flash">')[1].split("</ul>")[0]
    assert f"Copied “{EN}”" in flash and BOTH not in flash


def test_the_assemble_command_names_the_builtin_once(tmp_path):
    request = tmp_path / "request.json"
    request.write_text(json.dumps({"strategy": "builtin-native-slots", "resources": {},
                                   "conversation": {"history": [], "input": []}}))
    out = io.StringIO()
    call_command("assemble", "--input", str(request), stdout=out)
    strategy = json.loads(out.getvalue())["strategy"]
    assert strategy["name"] == EN and strategy["names"]["zh-hans"] == ZH
