"""The scanned message's id beside its index (sillytavern.md §7.3): a chat message's `id` comes back as
`matched_in.message_id` in activation and skip reasons, and is left out of the JSON when the chat gave none."""

from assembly import assemble
from assembly.sillytavern.models import WorldBook, WorldBookEntry
from assembly.sillytavern.worldinfo import activate_world_info


def _book(*entries: WorldBookEntry) -> WorldBook:
    return WorldBook(entries=entries, activation="keywords", scan_depth=10)


CHAT = [{"id": "a", "role": "user", "content": "the glade"}, {"id": "b", "role": "assistant", "content": "yes"},
        {"id": "c", "role": "user", "content": "a wolf"}]


def _run(book: WorldBook, chat: list[dict]):
    return activate_world_info(book, chat=chat, names={"user": "U", "char": "C"}, max_context=100_000)


def test_the_id_of_the_message_a_key_was_found_in():
    result = _run(_book(WorldBookEntry(uid=1, keys=("glade",), content="g"),
                        WorldBookEntry(uid=2, keys=("wolf",), content="w")), CHAT)
    found = {a.uid: (a.reason.matched_in.index, a.reason.matched_in.message_id) for a in result.active}
    assert found == {1: (0, "a"), 2: (2, "c")}
    dumped = {a["uid"]: a["reason"]["matched_in"] for a in result.model_dump(mode="json")["active"]}
    assert dumped[1] == {"kind": "message", "index": 0, "uid": None, "field": None, "message_id": "a"}


def test_a_skip_reason_names_the_message_too():
    result = _run(_book(WorldBookEntry(uid=1, keys=("glade",), secondary_keys=("dragon",), selective=True,
                                       selective_logic="and_any", content="g")), CHAT)
    reason = result.skipped[0].reason
    assert (reason.kind, reason.matched_in.index, reason.matched_in.message_id) == ("secondary_failed", 0, "a")


def test_without_ids_the_json_is_as_it_was():
    result = _run(_book(WorldBookEntry(uid=1, keys=("glade",), content="g")),
                  [{k: v for k, v in m.items() if k != "id"} for m in CHAT])
    assert result.model_dump(mode="json")["active"][0]["reason"]["matched_in"] == {
        "kind": "message", "index": 0, "uid": None, "field": None}


def test_assemble_gives_the_conversation_ids():
    result = assemble({"strategy": "builtin-st", "host": {"core_available": True},
                       "resources": {"worldbook": {"activation": "keywords", "entries": [
                           {"uid": 1, "keys": ["glade"], "content": "The glade.", "position": "before"}]}},
                       "conversation": {"history": [{"role": "user", "content": "hello"},
                                                    {"id": "m2", "role": "assistant", "content": "the glade"}],
                                        "input": [{"role": "user", "content": "ok"}]}})
    source = result.world_info.active[0].reason.matched_in
    assert (source.index, source.message_id) == (1, "m2")
