"""Property tests for the importers (quality.md: importers never crash on arbitrary JSON; round trips hold).

Arbitrary input may succeed or fail, but a failure is always ImportInvalid with a status of 400, 413 or 415 and a
path, the input is never changed, and whatever imports exports and re-imports to the same model.
"""

from __future__ import annotations

import copy
import json
import zlib

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assembly.reading import ImportInvalid
from assembly.sillytavern.card import export_character, import_character
from assembly.sillytavern.models import Character, Preset, Resources, WorldBook
from assembly.sillytavern.preset import export_preset, import_preset
from assembly.sillytavern.resource_set import normalize_resources
from assembly.sillytavern.vocabulary import GENERATION_TYPES, WORLD_POSITIONS
from assembly.sillytavern.worldbook import export_character_book, export_worldbook, import_worldbook
from tests.engine.sillytavern.test_resources import OWN_FIXTURES, PNG_SIGNATURE, card_text, make_png, png_chunk

FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

scalars = st.none() | st.booleans() | st.integers(-(2**64), 2**64) | st.floats(allow_nan=True) | st.text(max_size=12)
json_values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)

# Keys the importers read, so that random objects reach deep into the readers rather than stopping at the top.
KNOWN_KEYS = [
    "prompts", "prompt_order", "identifier", "name", "role", "content", "enabled", "marker", "injection_position",
    "injection_depth", "injectionDepth", "injection_order", "injection_trigger", "forbid_overrides", "character_id",
    "order", "names_behavior", "new_chat_prompt", "openai_max_context", "st", "data", "version", "type",
    "entries", "uid", "id", "key", "keys", "keysecondary", "secondary_keys", "position", "depth", "disable",
    "extensions", "selectiveLogic", "probability", "delayUntilRecursion", "characterFilter", "triggers",
    "scan_depth", "world_info_depth", "activation", "spec", "description", "depth_prompt", "talkativeness",
    "character_book", "tags", "first_mes", "preset", "character", "persona", "worldbook", "author_note",
    "extension_prompts", "value", "interval",
]
keyed_values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.sampled_from(KNOWN_KEYS) | st.text(max_size=6), children, max_size=6),
    max_leaves=30,
)

IMPORTERS = (import_preset, import_worldbook, import_character, normalize_resources)
RESULT_TYPES = {import_preset: Preset, import_worldbook: WorldBook, import_character: Character,
                normalize_resources: Resources}


def check_importer(importer, data) -> None:
    before = copy.deepcopy(data)
    try:
        result = importer(data)
    except ImportInvalid as error:
        assert error.code == "IMPORT_INVALID"
        assert error.status in (400, 413, 415)
        assert isinstance(error.path, str) and error.message
    else:
        assert isinstance(result, RESULT_TYPES[importer])
    assert repr(data) == repr(before)  # unchanged (repr, because a NaN never equals itself)


@FAST
@given(importer=st.sampled_from(IMPORTERS), data=json_values)
def test_arbitrary_json_raises_only_import_invalid(importer, data):
    check_importer(importer, data)


@FAST
@given(importer=st.sampled_from(IMPORTERS), data=keyed_values)
def test_arbitrary_objects_with_known_keys_raise_only_import_invalid(importer, data):
    check_importer(importer, data)


def leaf_paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from leaf_paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from leaf_paths(item, (*prefix, index))


def replaced(document, path, value):
    if not path:
        return value
    copied = copy.deepcopy(document)
    target = copied
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    return copied


REAL_DOCUMENTS = [
    (import_preset, json.loads((OWN_FIXTURES / "st_preset_custom.json").read_text())),
    (import_worldbook, json.loads((OWN_FIXTURES / "st_worldbook_positions.json").read_text())),
    (import_character, json.loads((OWN_FIXTURES / "card_v3_lyra.json").read_text())),
]


@FAST
@given(choice=st.sampled_from(REAL_DOCUMENTS), data=st.data(), value=json_values)
def test_real_files_with_one_value_replaced(choice, data, value):
    importer, document = choice
    path = data.draw(st.sampled_from(list(leaf_paths(document))))
    check_importer(importer, replaced(document, path, value))


@FAST
@given(blob=st.binary(max_size=200))
def test_arbitrary_bytes_raise_only_import_invalid(blob):
    for candidate in (blob, PNG_SIGNATURE + blob):
        try:
            import_character(candidate)
        except ImportInvalid as error:
            assert error.status in (400, 413, 415)


@FAST
@given(keyword=st.sampled_from([b"chara", b"ccv3", b"CCV3"]), kind=st.sampled_from([b"tEXt", b"zTXt", b"iTXt"]),
       payload=st.binary(max_size=120))
def test_png_card_chunks_with_arbitrary_payload(keyword, kind, payload):
    if kind == b"zTXt":
        body = keyword + b"\x00\x00" + zlib.compress(payload)
    elif kind == b"iTXt":
        body = keyword + b"\x00\x00\x00\x00\x00" + payload
    else:
        body = keyword + b"\x00" + payload
    try:
        import_character(make_png(png_chunk(kind, body)))
    except ImportInvalid as error:
        assert error.status == 400 and error.path.startswith("png")


@FAST
@given(card=json_values)
def test_png_with_arbitrary_card_json(card):
    try:
        import_character(make_png(card_text("ccv3", card)))
    except ImportInvalid as error:
        assert error.path.startswith("png[ccv3]")


# ---------------------------------------------------------------------------------------------- round trips

texts = st.text(max_size=15)
small_ints = st.integers(0, 50)
roles = st.sampled_from(["system", "user", "assistant", 0, 1, 2, None])
prompt_dicts = st.fixed_dictionaries(
    {"identifier": st.text(min_size=1, max_size=8)},
    optional={
        "name": texts, "role": roles, "content": texts, "enabled": st.booleans(), "marker": st.booleans(),
        "system_prompt": st.booleans(), "injection_position": st.sampled_from([0, 1]), "injection_depth": small_ints,
        "injection_order": st.integers(-5, 500), "forbid_overrides": st.booleans(),
        "injection_trigger": st.lists(st.sampled_from(GENERATION_TYPES), max_size=3, unique=True),
        "custom_flag": st.booleans(),
    },
)
presets = st.builds(
    lambda prompts, options: {"prompts": prompts, **options},
    st.lists(prompt_dicts, max_size=6, unique_by=lambda p: p["identifier"]),
    st.fixed_dictionaries({}, optional={
        "names_behavior": st.sampled_from([-1, 0, 1, 2]), "new_chat_prompt": texts, "wi_format": texts,
        "squash_system_messages": st.booleans(), "openai_max_context": st.integers(0, 10**6), "temperature": scalars,
    }),
)
entry_dicts = st.fixed_dictionaries(
    {},
    optional={
        "comment": texts, "content": texts, "keys": st.lists(texts, max_size=3), "secondary_keys": st.lists(texts,
                                                                                                          max_size=2),
        "position": st.sampled_from([*WORLD_POSITIONS, *range(8), "before_character", "author_note_bottom"]),
        "depth": st.none() | small_ints, "role": roles, "order": st.integers(-100, 1000), "enabled": st.booleans(),
        "constant": st.booleans(), "selective_logic": st.sampled_from([0, 1, 2, 3, "not_any"]),
        "outlet_name": texts, "probability": st.integers(0, 100), "group": texts, "group_weight": small_ints,
        "scan_depth": st.none() | small_ints, "case_sensitive": st.none() | st.booleans(),
        "delay_until_recursion": st.booleans() | small_ints, "sticky": st.none() | small_ints,
        "triggers": st.lists(st.sampled_from(GENERATION_TYPES), max_size=2),
        "character_filter": st.fixed_dictionaries({"isExclude": st.booleans(), "names": st.lists(texts, max_size=2)}),
        "use_regex": st.booleans(), "note": texts,
    },
)
books = st.builds(
    lambda entries, settings_: {"entries": [{**e, "uid": i} for i, e in enumerate(entries)], **settings_},
    st.lists(entry_dicts, max_size=5),
    st.fixed_dictionaries({}, optional={
        "name": texts, "activation": st.sampled_from(["all", "keywords"]), "scan_depth": small_ints,
        "recursive": st.booleans(), "budget_percent": st.integers(0, 100), "description": texts,
    }),
)
cards = st.builds(
    lambda fields, book: {"spec": "chara_card_v3", "spec_version": "3.0", "data": {**fields, **book}},
    st.fixed_dictionaries({"name": texts}, optional={
        "description": texts, "mes_example": texts, "tags": st.lists(texts, max_size=3), "nickname": texts,
        "group_only_greetings": st.lists(texts, max_size=2), "creation_date": small_ints,
        "extensions": st.fixed_dictionaries({}, optional={
            "talkativeness": st.sampled_from(["0.5", "0.1", 1, 0]), "fav": st.booleans(),
            "depth_prompt": st.fixed_dictionaries({"prompt": texts}, optional={"depth": small_ints, "role": roles}),
        }),
    }),
    st.just({}) | books.map(lambda b: {"character_book": b}),
)


@FAST
@given(data=presets)
def test_preset_round_trip(data):
    preset = import_preset(data)
    assert import_preset(export_preset(preset)) == preset
    with_order = import_preset({**data, "prompt_order": [{"character_id": 100001, "order": [
        {"identifier": p["identifier"], "enabled": True} for p in data["prompts"]]}]})
    assert import_preset(export_preset(with_order)) == with_order


@FAST
@given(data=books)
def test_world_book_round_trips_through_both_formats(data):
    book = import_worldbook(data)
    assert import_worldbook(export_worldbook(book)) == book
    assert import_worldbook(export_character_book(book)) == book
    native = export_worldbook(book)
    assert import_worldbook(export_worldbook(import_worldbook(native))) == import_worldbook(native)


@FAST
@given(data=cards)
def test_card_round_trip_and_png_equality(data):
    card = import_character(data)
    assert import_character(export_character(card)) == card
    assert import_character(make_png(card_text("ccv3", data))) == card


@FAST
@given(data=st.fixed_dictionaries({}, optional={"preset": presets, "worldbook": books, "character": cards}))
def test_normalize_resources_is_idempotent_over_exports(data):
    resources = normalize_resources(data)
    again = normalize_resources({
        **({"preset": export_preset(resources.preset)} if resources.preset else {}),
        **({"worldbook": export_worldbook(resources.worldbook)} if resources.worldbook else {}),
        **({"character": export_character(resources.character)} if resources.character else {}),
    })
    assert again == resources
