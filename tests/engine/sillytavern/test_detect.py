"""An upload's kind told from its bytes (`detect_upload`): a SillyTavern chat `.jsonl` (a header line with the names
and `chat_metadata`, then one message a line) is recognised; JSON documents, PNG cards and lookalikes keep their
kinds."""

import json
from pathlib import Path

import pytest

from assembly.sillytavern.chat import import_chat
from assembly.sillytavern.detect import detect_kind, detect_upload
from assembly.sillytavern.png import card_png, solid_png

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CHAT = (FIXTURES / "st_chat_harbour.jsonl").read_bytes()
SHARED = Path(__file__).resolve().parents[4] / "shared" / "fixtures" / "sillytavern"


def test_a_sillytavern_chat_file_is_a_chat():
    assert detect_upload(CHAT) == "chat"
    assert len(import_chat(CHAT).messages) == 3  # and it is one the chat importer reads


def test_a_chat_with_a_byte_order_mark_and_crlf_lines_is_a_chat():
    assert detect_upload(b"\xef\xbb\xbf" + CHAT.replace(b"\n", b"\r\n")) == "chat"


def test_a_chat_of_its_header_alone_is_a_chat():
    header = CHAT.splitlines()[0]
    assert detect_upload(header) == "chat"
    assert detect_kind(json.loads(header)) == "chat"


def test_a_chat_without_header_is_still_a_chat():
    assert detect_upload(b"\n".join(CHAT.splitlines()[1:])) == "chat"


@pytest.mark.parametrize("raw", [
    b'{"user_name": "Sam", "character_name": "Ada"}\n{"text": "not a message"}',  # second line no message
    b'{"user_name": "Sam"}\n{"mes": "hi", "is_user": true}',  # a first line that is neither
    b'{"a": 1}\n{"b": 2}',
    b'{"user_name": "Sam", "character_name": "Ada"}\nnot json',
    b"\xff\xfe not utf-8",
    b"",
])
def test_lookalikes_are_not_chats(raw):
    assert detect_upload(raw) is None


def test_json_documents_and_cards_keep_their_kinds():
    assert detect_upload(json.dumps({"prompts": [], "prompt_order": []}).encode()) == "preset"
    assert detect_upload(json.dumps({"entries": {}}).encode()) == "worldbook"
    assert detect_upload(json.dumps([{"findRegex": "/a/"}]).encode()) == "regex"
    card = {"spec": "chara_card_v2", "data": {"name": "Ada", "first_mes": "Hi."}}
    assert detect_upload(card_png(card, solid_png(2, 2))) == "character"


@pytest.mark.skipif(not SHARED.is_dir(), reason="the shared SillyTavern fixtures are not beside the project")
@pytest.mark.parametrize(("name", "kind"), [("st_card_Seraphina.png", "character"),
                                            ("st_cc_preset_Default.json", "preset"),
                                            ("st_worldinfo_Eldoria.json", "worldbook")])
def test_real_sillytavern_files_are_not_taken_for_chats(name, kind):
    assert detect_upload((SHARED / name).read_bytes()) == kind


def test_a_chat_of_one_message_line_is_a_chat():
    line = b'{"name": "Ada", "is_user": false, "mes": "Hello."}'
    assert detect_upload(line) == "chat"
    assert [m.content for m in import_chat(line).messages] == ["Hello."]


def test_a_chat_line_holding_a_line_separator_is_one_line():
    chat = CHAT.rstrip(b"\n") + b'\n{"name": "Ada", "is_user": false, "mes": "one\xe2\x80\xa8two"}\n'
    assert detect_upload(chat) == "chat"
    assert import_chat(chat).messages[-1].content == "one\u2028two"


def test_a_group_definition_is_not_a_chat():
    group = {"id": "1700000000000", "name": "Tavern", "members": ["ada.png", "sam.png"], "chat_id": "Tavern - 1",
             "chats": ["Tavern - 1"], "generation_mode": 0, "chat_metadata": {}}
    assert detect_kind(group) == "group"
    assert detect_upload(json.dumps(group).encode()) == "group"


def test_text_completion_templates_are_told_by_their_keys():
    # SillyTavern's master import: a lone template by its keys, a master export by an object-valued section
    assert detect_kind({"name": "ChatML", "input_sequence": "<|im_start|>user", "output_sequence": "x"}) == "template"
    assert detect_kind({"name": "Default", "story_string": "{{description}}"}) == "template"
    assert detect_kind({"name": "Neutral", "content": "Write the reply."}) == "template"
    assert detect_kind({"instruct": {"name": "A"}, "context": {"name": "B"}}) == "template"
    assert detect_kind({"name": "Sam", "description": "A visitor.", "position": 0}) == "persona"
