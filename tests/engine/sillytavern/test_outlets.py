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


def test_the_prompts_that_fill_an_outlet_hold_its_entries_as_children():
    lore = [{"uid": 7, "content": "a fact", "position": "outlet", "outlet_name": "notes", "order": 2},
            {"uid": 3, "content": "a rumour", "position": "outlet", "outlet_name": "notes", "order": 1},
            {"uid": 9, "content": "elsewhere", "position": "outlet", "outlet_name": "other"}]
    for engine in ("legacy", "v2"):
        prompts = [{"identifier": "main", "role": "system", "content": "Main sees [{{outlet::notes}}]"},
                   {"identifier": "chatHistory", "marker": True},
                   {"identifier": "tail", "role": "system", "content": "Tail sees [{{outlet::notes}}]"}]
        preset = {"prompts": prompts, "prompt_order": [{"character_id": 100001, "order": [
            {"identifier": p["identifier"], "enabled": True} for p in prompts]}]}
        result = assemble({"strategy": "builtin-st", "host": {"core_available": True}, "macro_engine": engine,
                           "resources": {"preset": preset, "character": {"name": "Nell"},
                                         "worldbook": {"entries": lore, "activation": "all"}},
                           "conversation": {"history": [], "input": [{"id": "i", "role": "user", "content": "Hi"}]}})
        assert [m.content for m in result.request.messages] == [
            "Main sees [a rumour\na fact]", "Hi", "Tail sees [a rumour\na fact]"], engine
        held = {n.id: [(c["id"], c["lock_reason"]) for c in n.children] for n in result.nodes if n.children}
        # the entries in the outlet's order, once per prompt that filled it; the outlet no prompt reads is no one's
        assert held == {"preset:main": [("worldbook:3", "macro:outlet::notes"), ("worldbook:7", "macro:outlet::notes")],
                        "preset:tail": [("worldbook:3", "macro:outlet::notes"), ("worldbook:7", "macro:outlet::notes")]
                        }, engine
