"""{{outlet::name}} under builtin-st (sillytavern.md §7.6): every use gets the outlet's text."""

from assembly import assemble


def run(lore):
    prompts = [{"identifier": "main", "role": "system", "content": "Main sees [{{outlet::notes}}]"},
               {"identifier": "chatHistory", "marker": True},
               {"identifier": "tail", "role": "system", "content": "Tail sees [{{outlet::notes}}] and [{{outlet::none}}]"}]
    preset = {"prompts": prompts, "prompt_order": [{"character_id": 100001, "order": [
        {"identifier": p["identifier"], "enabled": True} for p in prompts]}]}
    result = assemble({"strategy": "builtin-st", "host": {"core_available": True},
                       "resources": {"preset": preset, "character": {"name": "Nell"},
                                     "worldbook": {"entries": lore, "activation": "all"}},
                       "conversation": {"history": [], "input": [{"id": "i", "role": "user", "content": "Hi"}]}})
    return [m.content for m in result.request.messages], [d["code"] for d in result.diagnostics]


def test_every_use_of_an_outlet_gets_its_text():
    texts, codes = run([{"uid": 7, "content": "a fact", "position": "outlet", "outlet_name": "notes"}])
    assert texts == ["Main sees [a fact]", "Hi", "Tail sees [a fact] and []"]
    assert "OUTLET_MARKER_REPEATED" not in codes


def test_an_outlet_without_entries_is_empty_at_every_use():
    texts, _ = run([])
    assert texts == ["Main sees []", "Hi", "Tail sees [] and []"]
