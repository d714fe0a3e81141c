"""SillyTavern's chat file (`.jsonl`): a header line with the names and `chat_metadata`, then one message a line."""

from __future__ import annotations

import copy
import json
from typing import Any

from assembly.reading import (
    MAX_IMPORT_BYTES,
    MISSING,
    REQUIRED,
    ROLES,
    ImportInvalid,
    Reader,
    guarded,
    invalid,
    join_path,
    read_object,
    read_text,
)
from assembly.sillytavern.models import ChatLog, ChatLogMessage
from assembly.sillytavern.notes import parse_author_note
from assembly.sillytavern.vocabulary import EXTENSION_POSITION_BY_NUMBER

_CHAT_NOTE_KEYS = ("note_prompt", "note_interval", "note_position", "note_depth", "note_role")


def _chat_log(data: str | bytes) -> ChatLog:
    if isinstance(data, bytes):
        if len(data) > MAX_IMPORT_BYTES:
            raise ImportInvalid("", f"a chat file of at most {MAX_IMPORT_BYTES} bytes", status=413)
        try:
            data = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise ImportInvalid("", "a UTF-8 text file of JSON lines (SillyTavern's .jsonl chat)") from None
    if not isinstance(data, str):
        raise invalid("", "the text of a SillyTavern chat file (JSON lines)", data)
    header: dict[str, Any] = {}
    messages: list[ChatLogMessage] = []
    hidden_lines: list[tuple[int, dict[str, Any]]] = []
    # SillyTavern splits on "\n" alone: a U+2028 or a form feed inside a message is text, not a line end
    for number, line in enumerate(data.split("\n"), start=1):
        if not line.strip():
            continue
        where = f"line {number}"
        try:
            item = json.loads(line)
        except ValueError:
            raise ImportInvalid(where, "one JSON object per line") from None
        r = Reader(read_object(item, where, "a chat message object"), where)
        if number == 1 and "mes" not in item:  # the header: names and chat metadata
            header = item
            continue
        text = read_text(*r.get("mes"), default=REQUIRED)
        is_user = js_truthy(r.get("is_user")[0])
        if js_truthy(r.get("is_system")[0]):
            hidden_lines.append((len(messages), copy.deepcopy(item)))
            continue
        extra, extra_where = r.get("extra")
        narrator = isinstance(extra, dict) and extra.get("type") == "narrator"
        if extra is not MISSING and extra is not None and not isinstance(extra, dict):
            raise invalid(extra_where, "an object", extra)
        role = "user" if is_user else "system" if narrator else "assistant"
        content = text.replace("\r", "")
        messages.append(ChatLogMessage(role=role, content=content, name=read_text(*r.get("name")),
                                       other_fields=copy.deepcopy(item)))
    hr = Reader(header, "line 1")
    metadata, metadata_where = hr.get("chat_metadata")
    note = None
    kept_metadata: dict[str, Any] = {}
    if metadata is not MISSING and metadata is not None:
        metadata = read_object(metadata, metadata_where, "an object")
        fields = {k: metadata[k] for k in _CHAT_NOTE_KEYS if k in metadata}
        if isinstance(fields.get("note_prompt"), str) and fields["note_prompt"].strip():
            note = parse_author_note(fields, metadata_where)
        chat_book = read_text(metadata.get("world_info"), join_path(metadata_where, "world_info"))
        kept_metadata = copy.deepcopy(metadata)
    else:
        chat_book = ""
    return ChatLog(user_name=read_text(*hr.get("user_name")), character_name=read_text(*hr.get("character_name")),
                   messages=tuple(messages), hidden=len(hidden_lines), author_note=note, world_info=chat_book,
                   hidden_lines=tuple(hidden_lines), metadata_fields=kept_metadata, crlf="\r\n" in data,
                   header_fields=copy.deepcopy(header))


def js_truthy(value: Any) -> bool:
    """SillyTavern tests `is_user` / `is_system` by JavaScript truthiness: "" and 0 are false, "false" is true."""
    return value is not MISSING and value not in (None, False, 0, "") and value == value  # NaN is falsy


def import_chat(data: str | bytes) -> ChatLog:
    """A SillyTavern chat file (`.jsonl`: a header line with the names and `chat_metadata`, then one message per
    line) -> ChatLog. User messages are `is_user`; narrator messages (`extra.type` "narrator") are system; hidden
    messages (`is_system`) are counted and left out; the chat's author's note comes from `chat_metadata.note_*`."""
    return guarded(lambda: _chat_log(data))


def export_chat(log: ChatLog) -> str:
    """ChatLog -> a SillyTavern chat file (`.jsonl`). What the reader kept comes back as written (hidden lines,
    the lines' other keys, the rest of `chat_metadata` (a note the log does not carry included), CRLF line ends);
    the names, texts and author's note are the log's own, so an edited log exports its edits."""
    metadata: dict[str, Any] = copy.deepcopy(log.metadata_fields)
    note = log.author_note
    if note is not None:
        position = {v: k for k, v in EXTENSION_POSITION_BY_NUMBER.items()}[note.position]
        metadata.update({"note_prompt": note.content, "note_interval": note.interval, "note_position": position,
                         "note_depth": note.depth, "note_role": ROLES.index(note.role)})
    if log.world_info:
        metadata["world_info"] = log.world_info
    else:
        metadata.pop("world_info", None)
    header = copy.deepcopy(log.header_fields)
    header.update({"user_name": log.user_name, "character_name": log.character_name, "chat_metadata": metadata})
    lines = [header]
    hidden = iter(log.hidden_lines)
    pending = next(hidden, None)
    for index, m in enumerate(log.messages):
        while pending is not None and pending[0] <= index:
            lines.append(copy.deepcopy(pending[1]))
            pending = next(hidden, None)
        lines.append(_message_line(m, log))
    while pending is not None:
        lines.append(copy.deepcopy(pending[1]))
        pending = next(hidden, None)
    end = "\r\n" if log.crlf else "\n"
    return "".join(json.dumps(line, ensure_ascii=False) + end for line in lines)


def _message_line(m: ChatLogMessage, log: ChatLog) -> dict[str, Any]:
    """One message's line: the line as it was read (its keys in their order), with what the log says now."""
    line = copy.deepcopy(m.other_fields)
    written = line.get("mes")
    line["name"] = m.name or (log.user_name if m.role == "user" else log.character_name)
    if "is_user" not in line or js_truthy(line["is_user"]) != (m.role == "user"):
        line["is_user"] = m.role == "user"
    if "is_system" not in line:
        line["is_system"] = False
    line["mes"] = written if isinstance(written, str) and written.replace("\r", "") == m.content else m.content
    extra = line.get("extra")
    if m.role == "system" and not (isinstance(extra, dict) and extra.get("type") == "narrator"):
        line["extra"] = {**(extra if isinstance(extra, dict) else {}), "type": "narrator"}
    elif m.role != "system" and isinstance(extra, dict) and extra.get("type") == "narrator":
        line["extra"] = {k: v for k, v in extra.items() if k != "type"}
    elif "extra" not in line and not m.other_fields:
        line["extra"] = {}
    return line
