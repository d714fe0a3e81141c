"""The import dry run offers one kind control (the detected kind, changeable) and "Import it" imports as the kind
chosen there; a SillyTavern chat `.jsonl` is recognised and sent to the session page that imports chats."""

import json
import re
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from strategies_app.models import Character, PendingUpload, WorldBook
from tests.web.conftest import client_for

CHAT = (Path(__file__).resolve().parents[1] / "engine" / "fixtures" / "st_chat_harbour.jsonl").read_bytes()
# a card that embeds a book: detected as a card, importable as a world book too
CARD = {"spec": "chara_card_v2", "spec_version": "2.0", "data": {
    "name": "Mira Vale", "description": "A scout.", "first_mes": "Hello.",
    "character_book": {"name": "Mira's book", "entries": [
        {"id": 1, "keys": ["ridge"], "content": "The ridge is steep.", "enabled": True, "insertion_order": 10}]}}}


def _post(client, **data):
    return client.post("/resources/import/", data)


def _kind_controls(page) -> list[str]:
    html = page.content.decode()
    return re.findall(r'<select[^>]*name="kind"[^>]*>', html) + re.findall(r'<input[^>]*name="kind"[^>]*>', html)


def _token(page) -> str:
    return re.search(rb'name="token" value="([^"]+)"', page.content).group(1).decode()


def _dry_run(client):
    return _post(client, kind="auto", dry_run="1",
                 file=SimpleUploadedFile("mira.json", json.dumps(CARD).encode()))


def test_the_dry_run_page_has_exactly_one_kind_control_set_to_the_detected_kind(users):
    page = _dry_run(client_for(users["admin"]))
    assert page.status_code == 200 and b'data-dry-run="true"' in page.content
    controls = _kind_controls(page)
    assert len(controls) == 1 and "data-kind-choice" in controls[0]
    form = page.content.decode().split("data-import-it", 1)[1].split("</form>", 1)[0]
    assert re.findall(r'<option value="(\w+)" selected>', form) == ["character"]
    assert b'value="auto"' not in page.content  # the kind is known now: no "detect" option
    assert b'name="file"' not in page.content and b'href="/resources/import/" data-pick-another' in page.content


def test_changing_the_kind_imports_as_the_chosen_kind(users):
    client = client_for(users["admin"])
    token = _token(_dry_run(client))
    page = _post(client, kind="worldbook", token=token)
    assert page.status_code == 200 and b'data-report-kind="worldbook"' in page.content
    assert b'data-dry-run="false"' in page.content
    assert WorldBook.objects.get().entries.count() == 1 and Character.objects.count() == 0
    assert not PendingUpload.objects.filter(token=token).exists()


def test_keeping_the_detected_kind_imports_it(users):
    client = client_for(users["admin"])
    _post(client, kind="character", token=_token(_dry_run(client)))
    assert Character.objects.get().name == "Mira Vale" and WorldBook.objects.count() == 0


def test_a_failed_import_it_keeps_the_upload_and_offers_the_one_choice_again(users):
    client = client_for(users["admin"])
    token = _token(_dry_run(client))
    page = _post(client, kind="persona", token=token)
    assert page.status_code == 400 and b"looks like a character card, not a persona" in page.content
    assert len(_kind_controls(page)) == 1 and _token(page) == token
    assert Character.objects.count() == 0
    page = _post(client, kind="character", token=token)
    assert page.status_code == 200 and Character.objects.get().name == "Mira Vale"


def test_the_first_page_still_has_one_kind_control_with_detection(users):
    page = client_for(users["admin"]).get("/resources/import/")
    controls = _kind_controls(page)
    assert len(controls) == 1 and b'<option value="auto" selected>' in page.content


def test_a_chat_jsonl_is_recognised_and_pointed_to_the_session_page(users):
    page = _post(client_for(users["admin"]), kind="auto", dry_run="1",
                 file=SimpleUploadedFile("harbour.jsonl", CHAT))
    assert page.status_code == 400
    assert b"the file is a SillyTavern chat (.jsonl), which is imported into a session" in page.content
    assert PendingUpload.objects.count() == 0 and Character.objects.count() == 0


def test_a_chat_imported_as_a_card_explains_itself(users):
    page = _post(client_for(users["admin"]), kind="character", file=SimpleUploadedFile("harbour.jsonl", CHAT))
    assert page.status_code == 400 and b"looks like a chat log, not a character card" in page.content


def _listed(page) -> tuple[str, list[str]]:
    html = page.content.decode()
    heading = re.search(r"<p data-items-heading>([^<]*)</p>", html)
    items = re.findall(r"<li>([^<]*)</li>", html.split("data-items-heading", 1)[1].split("</ol>", 1)[0]) if heading \
        else []
    return (heading.group(1) if heading else ""), items


def test_the_report_says_what_its_list_names(users):
    client = client_for(users["admin"])
    token = _token(_dry_run(client))
    assert _listed(_dry_run(client)) == ("The card fields that hold text:", ["name", "description", "first_mes"])
    assert _listed(_post(client, kind="worldbook", token=token)) == ("Its entries:", ["entry 1, untitled"])


def test_a_persona_report_does_not_list_its_name_twice(users):
    persona = {"name": "Traveller", "description": "A surveyor."}
    page = _post(client_for(users["admin"]), kind="persona", dry_run="1",
                 file=SimpleUploadedFile("p.json", json.dumps(persona).encode()))
    assert page.status_code == 200 and b"<strong>Traveller</strong>" in page.content
    assert _listed(page) == ("", []) and b"<ol>" not in page.content


def test_detecting_a_file_that_is_not_json_says_so_and_where_not_to_choose_a_kind(users):
    client = client_for(users["admin"])
    for raw, said in ((b'{"name": "Lamp', "Unterminated string starting at: line 1, column 10"),
                      (b"", "Expecting value: line 1, column 1")):
        page = _post(client, kind="auto", dry_run="1", file=SimpleUploadedFile("broken.json", raw))
        html = page.content.decode()
        assert page.status_code == 400 and f"not JSON ({said})" in html, html[:2000]
        assert "could not be told" not in html and "choose the kind" not in html
    # valid JSON of no known shape still asks for the kind
    page = _post(client, kind="auto", dry_run="1", file=SimpleUploadedFile("odd.json", b'{"odd": 1}'))
    assert page.status_code == 400 and b"kind: expected the kind the file is, chosen from the list" in page.content
    chinese = client_for(users["admin"])
    chinese.cookies["django_language"] = "zh-hans"
    page = _post(chinese, kind="auto", dry_run="1", file=SimpleUploadedFile("odd.json", b'{"odd": 1}'))
    assert "kind：应为从列表中选择的文件类型（无法从文件判断）" in page.content.decode()


GROUP = {"name": "Harbour crew", "members": ["mira.png"], "chats": ["crew"], "chat_metadata": {}}
STRATEGY = {"format": "prompt-assembly-strategy", "version": 1, "name": "Mine", "placement": "st", "rules": []}


@pytest.mark.parametrize(("content", "english", "chinese"), [
    (GROUP, "it looks like a group chat definition, which this page does not import", "它看起来是群聊定义"),
    (STRATEGY, "it looks like a studio strategy, which this page does not import", "它看起来是工作室的策略文件"),
])
def test_a_kind_this_page_does_not_import_is_named_and_said_in_the_pages_language(users, content, english,
                                                                                  chinese):
    client = client_for(users["admin"])
    upload = {"kind": "auto", "file": SimpleUploadedFile("file.json", json.dumps(content).encode())}
    page = _post(client, **upload)
    assert page.status_code == 400 and english in page.content.decode()
    upload["file"].seek(0)
    page = client.post("/resources/import/", upload, HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert page.status_code == 400 and f"{chinese}，本页面不导入这种文件" in page.content.decode()


def test_a_file_read_as_another_kind_than_it_looks_says_so_in_the_dry_run(users):
    client = client_for(users["admin"])
    page = _post(client, kind="character", dry_run="1",
                 file=SimpleUploadedFile("crew.json", json.dumps(STRATEGY).encode()))
    html = page.content.decode()
    assert page.status_code == 200 and "data-kind-mismatch" in html
    assert "The file looks like a" in html and "only what a" in html
    same = _dry_run(client).content.decode()  # a card read as a card: nothing to say
    assert "data-kind-mismatch" not in same


@pytest.mark.parametrize("data", [CARD, {"spec": "chara_card_v2", "data": {"name": "Mira"}}])
def test_a_wrong_kind_chosen_is_refused_in_chinese_with_the_reader_s_own_reason(users, data):
    """The refusal names both kinds and the reader's refusal in the page's words, or stays English whole."""
    client = client_for(users["admin"])
    client.cookies["django_language"] = "zh-hans"
    page = _post(client, kind="persona", file=SimpleUploadedFile("mira.json", json.dumps(data).encode()))
    html = page.content.decode()
    assert page.status_code == 400
    line = re.search(r"<p>详情：(.*?) <span", html).group(1)
    assert line.startswith("kind：文件看起来是角色卡，不是用户设定（") and "expected" not in line, line
    assert "应为字段 <code>name, description, position, depth, role</code> 之一" in line  # field names as code


@pytest.mark.parametrize(("language", "words"), [
    ("en", "file: expected a PNG image or a CharX archive, as the file&#x27;s name says (its bytes are neither)"),
    ("zh-hans", "file：应为文件名所示的 PNG 图片或 CharX 压缩包（但文件内容两者都不是）")])
def test_a_file_named_as_a_card_that_is_not_one_says_so_not_not_json(users, language, words):
    client = client_for(users["admin"])
    client.cookies["django_language"] = language
    page = _post(client, kind="auto", dry_run="1", file=SimpleUploadedFile("fake.png", b"GIF89a not a png"))
    assert page.status_code == 400 and words in page.content.decode()
    assert PendingUpload.objects.count() == 0


@pytest.mark.parametrize(("language", "words"), [
    ("en", "file: expected a SillyTavern chat file (.jsonl); this is another kind of SillyTavern file, which an "
           "admin imports on the Import page"),
    ("zh-hans", "file：应为 SillyTavern 聊天文件（.jsonl）；这是另一种 SillyTavern 文件，由管理员在导入页面导入")])
def test_a_card_given_to_a_session_s_chat_import_is_pointed_to_the_import_page(users, world, language, words):
    from preview_app.models import SessionEvent

    client = client_for(users["designer"])
    client.cookies["django_language"] = language
    session = world["session"]
    before = SessionEvent.objects.filter(session=session).count()
    page = client.post(f"/sessions/{session.pk}/chat/import/",
                       {"file": SimpleUploadedFile("mira.json", json.dumps(CARD, indent=2).encode())})
    assert page.status_code == 400 and words in page.content.decode()
    assert SessionEvent.objects.filter(session=session).count() == before
