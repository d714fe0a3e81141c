"""assembly.request.read_request: a caller's messages become the engine's records (id, role, content first), and no
message dict of the caller is changed, returned or kept."""

import copy

from pydantic import BaseModel

from assembly import assemble
from assembly.caches import CACHES
from assembly.request import read_request
from tests.engine.test_assemble import B_LORE, B_PROMPTS, request


def _request():
    req = copy.deepcopy(request("builtin-st", B_PROMPTS, lore=B_LORE, history=("OLD {{user}}", "ANSWER"),
                                character={"name": "Seraphina", "description": "Guardian."}))
    req["resources"]["worldbook"]["activation"] = "keywords"
    req["resources"]["worldbook"]["entries"].append({"uid": "k", "content": "KEYED", "key": ["ANSWER"]})
    return req


def _reached(value, found, seen):
    if id(value) in seen:
        return found
    seen.add(id(value))
    found.add(id(value))
    if isinstance(value, BaseModel):
        children = [*value.__dict__.values(), *(value.__pydantic_extra__ or {}).values()]
    elif isinstance(value, dict):
        children = [*value.keys(), *value.values()]
    elif isinstance(value, (list, tuple, set, frozenset)):
        children = list(value)
    elif hasattr(value, "__slots__") or hasattr(value, "__dict__"):
        names = getattr(value, "__slots__", ()) or vars(value).keys()
        children = [getattr(value, name, None) for name in names]
    else:
        return found
    for child in children:
        _reached(child, found, seen)
    return found


def test_every_message_is_read_into_a_record_of_its_own_in_record_order():
    req = _request()
    reordered = {"role": "user", "content": "late id", "id": "h9"}
    req["conversation"]["history"].append(reordered)
    read = read_request(req)
    assert read.history[0] == req["conversation"]["history"][0]
    assert read.history[-1] is not reordered and list(read.history[-1]) == ["id", "role", "content"]
    assert read.history[-1] == reordered


def test_no_message_of_the_caller_is_changed_returned_or_remembered():
    req = _request()
    before = copy.deepcopy(req)
    messages = [*req["conversation"]["history"], *req["conversation"]["input"]]
    results = [assemble(req), assemble(req)]
    assert req == before
    mine = {id(m) for m in messages}
    kept = (results, [dict(cache._entries) for cache in CACHES])
    assert not mine & _reached(kept, set(), set())


def test_a_changed_message_gets_a_fresh_answer():
    req = _request()
    first = assemble(req).model_dump_json()
    req["conversation"]["history"][1]["content"] = "nothing keyed"
    changed = assemble(req).model_dump_json()
    assert changed != first
    assert changed == assemble(copy.deepcopy(req)).model_dump_json()
    req["conversation"]["history"][1]["content"] = "ANSWER"
    assert assemble(req).model_dump_json() == first
