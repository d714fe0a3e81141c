"""SillyTavern chat files (.jsonl) read into a chat log: header names and author's note, user / character / narrator
messages, hidden messages counted and left out (sillytavern.md §3, §8.1), and bad lines named."""

import json
from pathlib import Path

import pytest

from assembly.reading import ImportInvalid
from assembly.sillytavern.chat import export_chat, import_chat

FIXTURE = Path(__file__).parents[1] / "fixtures" / "st_chat_lighthouse.jsonl"


def test_a_chat_file_becomes_messages_names_and_its_authors_note():
    log = import_chat(FIXTURE.read_bytes())
    assert (log.user_name, log.character_name, log.hidden) == ("Traveller", "Mira Vell", 1)
    assert log.world_info == "Saltmarsh Coast"  # the chat's own book (chat lore, §7.2)
    assert [(m.role, m.name, m.content) for m in log.messages] == [
        ("assistant", "Mira Vell", "*The door groans open.* Tide caught you, did it?"),
        ("user", "Traveller", "It did. May I wait here?"),
        ("system", "System", "The wind rises outside."),  # a narrator message
        ("assistant", "Mira Vell", "Sit by the stove.\nDon't touch the lamp."),  # carriage returns go, as in §3
    ]
    note = log.author_note
    assert (note.content, note.interval, note.position, note.depth, note.role) == (
        "[Mira keeps her answers short.]", 2, "in_chat", 3, "system")


def test_a_chat_without_a_header_or_a_note():
    log = import_chat('{"name": "A", "is_user": true, "mes": "hi"}\n\n')
    assert [(m.role, m.content) for m in log.messages] == [("user", "hi")] and log.author_note is None


@pytest.mark.parametrize(("data", "path", "expected"), [
    (b"\xff\xfe", "", "a UTF-8 text file of JSON lines"),
    ('{"user_name": "A"}\n{not json', "line 2", "one JSON object per line"),
    ('{"user_name": "A"}\n[1, 2]', "line 2", "a chat message object"),
    ('{"user_name": "A"}\n{"is_user": true}', "line 2.mes", "a string (required)"),
    ('{"user_name": "A", "chat_metadata": {"note_prompt": "n", "note_depth": -1}}\n{"mes": "x"}',
     "line 1.chat_metadata.note_depth", "an integer"),
])
def test_bad_chat_files_name_the_line_and_field(data, path, expected):
    with pytest.raises(ImportInvalid) as error:
        import_chat(data)
    assert error.value.path == path and expected in error.value.expected


def test_an_oversized_chat_is_refused_with_413():
    with pytest.raises(ImportInvalid) as error:
        import_chat(b"x" * (5 * 1024 * 1024 + 1))
    assert error.value.status == 413



def test_a_chat_log_exported_reads_back_the_same():
    log = import_chat(FIXTURE.read_bytes())
    text = export_chat(log)
    assert import_chat(text) == log
    header = json.loads(text.splitlines()[0])
    assert header["chat_metadata"] == {"note_prompt": "[Mira keeps her answers short.]", "note_interval": 2,
                                       "note_position": 1, "note_depth": 3, "note_role": 0,
                                       "timedWorldInfo": {"sticky": {}, "cooldown": {}},
                                       "world_info": "Saltmarsh Coast"}
    narrator = json.loads(text.splitlines()[3])
    assert (narrator["is_user"], narrator["extra"]) == (False, {"type": "narrator"})


@pytest.mark.parametrize("name", ["st_chat_lighthouse.jsonl", "st_chat_harbour.jsonl"])
def test_an_unedited_chat_exports_line_for_line_as_written(name):
    # send_date, swipes, extra, hidden lines, chat_metadata and a message's CRLF all come back
    written = (FIXTURE.parent / name).read_text(encoding="utf-8")
    exported = export_chat(import_chat(written))
    assert [json.loads(line) for line in exported.splitlines()] == [json.loads(line) for line in written.splitlines()]


def test_a_file_with_crlf_line_ends_keeps_them():
    written = (FIXTURE.parent / "st_chat_harbour.jsonl").read_text(encoding="utf-8").replace("\n", "\r\n")
    assert export_chat(import_chat(written)) == written


@pytest.mark.parametrize(("is_system", "hidden"), [("", False), (0, False), (None, False), ("true", True), (1, True)])
def test_flags_are_read_by_javascript_truthiness(is_system, hidden):
    # SillyTavern tests `is_system` as a JavaScript condition; an empty string is written by some exporters
    line = json.dumps({"name": "Ada", "is_user": False, "is_system": is_system, "mes": "hi"})
    log = import_chat('{"user_name": "Sam", "character_name": "Ada"}\n' + line)
    assert (log.hidden, len(log.messages)) == ((1, 0) if hidden else (0, 1))
