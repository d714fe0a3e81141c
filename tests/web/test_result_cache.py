"""The studio's engine result cache (studio/result_cache.py): a session's preview asked again runs the engine once,
and any edit of a row the request is built from (the strategy, a resource, the session's chat, input, options, seed,
text template) gives a fresh result. The rows are edited with `update()` where it matters: no update time is bumped,
so a stale answer would show."""

import json

import pytest
from django.urls import get_resolver

import assembly.api
from assembly import AssemblyError
from preview_app import services as session_services
from preview_app.models import Session, SessionEvent
from strategies_app import services as strategy_services
from strategies_app.models import Character, Persona, PromptEntry, RegexScript, Strategy, TextTemplate, WorldBookEntry
from studio import result_cache
from studio.engine_runs import assemble
from tests.web.conftest import client_for
from tests.web.text_sessions import builtin, make_text_session

pytestmark = pytest.mark.django_db


@pytest.fixture
def engine_runs(monkeypatch):
    """The requests the engine itself ran, from an empty result cache (the world's set-up ran some of them)."""
    get_resolver().url_patterns  # noqa: B018 - the views import the engine's `assemble` before it is wrapped here
    result_cache.results_cache().clear()
    seen: list = []
    real = assembly.api.assemble

    def counted(request):
        seen.append(request)
        return real(request)

    monkeypatch.setattr(assembly.api, "assemble", counted)
    return seen


def _preview(client, session, query="strategy=builtin-st"):
    response = client.get(f"/api/sessions/{session.pk}/preview?{query}")
    assert response.status_code == 200, response.content[:300]
    return json.dumps(response.json(), ensure_ascii=False)


def _twice_then_edited(client, session, engine_runs, edit, query="strategy=builtin-st"):
    """The preview before `edit()`, asked twice (the second reads the kept result), and after it (a run of its
    own)."""
    before = _preview(client, session, query)
    runs = len(engine_runs)
    assert _preview(client, session, query) == before and len(engine_runs) == runs
    edit()
    after = _preview(client, session, query)
    assert len(engine_runs) == runs + 1
    return before, after


def test_two_previews_of_an_unchanged_session_run_the_engine_once(world, users, engine_runs):
    client = client_for(users["designer"])
    page = f"/sessions/{world['session'].pk}/preview/"
    first, second = client.get(page), client.get(page)
    assert first.status_code == second.status_code == 200 and len(engine_runs) == 1
    assert _preview(client, world["session"], "") == _preview(client, world["session"], "")
    assert len(engine_runs) == 1  # the JSON preview of the applied strategy is the page's engine request


def test_a_preset_prompt_edited_in_place_gives_a_fresh_preview(world, users, engine_runs):
    before, after = _twice_then_edited(client_for(users["designer"]), world["session"], engine_runs, lambda: (
        PromptEntry.objects.filter(preset_id=world["preset"], identifier="jailbreak").update(content="Be terse.")))
    assert "Stay brief." in before and "Be terse." in after and "Stay brief." not in after


def test_a_character_persona_and_world_book_entry_edited_give_fresh_previews(world, users, engine_runs):
    client, session = client_for(users["designer"]), world["session"]
    Session.objects.filter(pk=session.pk).update(current_input="Open the gate")  # the entry's key
    _, after = _twice_then_edited(client, session, engine_runs, lambda: (
        Character.objects.filter(pk=world["character"]).update(description="A clockmaker.")))
    assert "A clockmaker." in after and "An engineer." not in after
    _, after = _twice_then_edited(client, session, engine_runs, lambda: (
        Persona.objects.filter(pk=session.persona_id).update(description="A courier.")))
    assert "A courier." in after
    before, after = _twice_then_edited(client, session, engine_runs, lambda: (
        WorldBookEntry.objects.filter(book__name="Tiny book").update(content="The gate opens at dawn.")))
    assert "The gate is shut at night." in before and "The gate opens at dawn." in after


def test_a_regex_script_edited_gives_a_fresh_preview(world, users, engine_runs):
    client, session = client_for(users["designer"]), world["session"]
    script = RegexScript.objects.create(name="Shout", find_regex="/Earlier/g", replace_string="BEFORE",
                                        placement=[1, 2], prompt_only=True)
    session.regex_scripts.add(script)
    before, after = _twice_then_edited(client, session, engine_runs, lambda: (
        RegexScript.objects.filter(pk=script.pk).update(replace_string="LONG AGO")))
    assert "BEFORE" in before and "LONG AGO" in after and "BEFORE" not in after


def test_a_strategy_draft_edit_and_a_new_applied_revision_give_fresh_previews(world, users, engine_runs):
    client, session, own = client_for(users["designer"]), world["session"], world["own"]
    rule = {"id": "weather", "kind": "custom", "enabled": True, "text": "Mention the weather.", "role": "user",
            "delivery": "pre-step"}

    def draft_edit():
        strategy = Strategy.objects.get(pk=own.pk)
        strategy_services.draft_update(strategy=strategy, user=users["designer"], expected_version=strategy.version,
                                       document={**strategy.draft, "rules": [*strategy.draft["rules"], rule]})

    before, after = _twice_then_edited(client, session, engine_runs, draft_edit, query=f"strategy={own.slug}")
    assert "Mention the weather." not in before and "Mention the weather." in after

    def apply_the_draft():
        strategy = Strategy.objects.get(pk=own.pk)
        strategy_services.revision_save(strategy=strategy, user=users["designer"], note="weather")
        session_services.strategy_apply(session=Session.objects.get(pk=session.pk), strategy=strategy)

    before = _preview(client, session, "")
    apply_the_draft()
    after = _preview(client, session, "")  # the request of the draft's preview above: read from the cache
    assert "Mention the weather." not in before and "Mention the weather." in after


def test_the_chat_the_input_and_the_options_give_fresh_previews(world, users, engine_runs):
    client, session = client_for(users["designer"]), world["session"]
    before, after = _twice_then_edited(client, session, engine_runs, lambda: (
        SessionEvent.objects.filter(session=session, content="Earlier").update(content="Much earlier")))
    assert '"Earlier"' in before and "Much earlier" in after
    _, after = _twice_then_edited(client, session, engine_runs, lambda: (
        session_services.event_append(session=Session.objects.get(pk=session.pk), role="assistant",
                                      content="A new reply")))
    assert "A new reply" in after
    _, after = _twice_then_edited(client, session, engine_runs, lambda: (
        Session.objects.filter(pk=session.pk).update(current_input="Goodbye")))
    assert "Goodbye" in after
    plain, runs = _preview(client, session), len(engine_runs)
    counted = _preview(client, session, "strategy=builtin-st&tokenizer=cl100k_base")
    assert plain != counted and len(engine_runs) == runs + 1  # another option, another request


def test_the_chance_seed_gives_a_fresh_preview(world, users, engine_runs):
    client, session = client_for(users["designer"]), world["session"]
    entry = WorldBookEntry.objects.get(book__name="Tiny book")
    WorldBookEntry.objects.filter(pk=entry.pk).update(entry_fields={**entry.entry_fields, "probability": 50})
    Session.objects.filter(pk=session.pk).update(current_input="Open the gate", world_info_activation="keywords")
    seeds = {}
    for seed in range(1, 9):  # eight seeds: the rolls of at least two differ
        Session.objects.filter(pk=session.pk).update(chance_seed=seed)
        seeds[seed] = _preview(client, session)
        assert _preview(client, session) == seeds[seed]
    assert len(engine_runs) == 8 and len(set(seeds.values())) > 1


def test_a_text_template_edited_in_place_gives_a_fresh_preview(users, engine_runs):
    session = make_text_session(users["designer"], users["admin"])
    chatml = builtin("instruct", "ChatML")
    own = TextTemplate.objects.create(kind="instruct", name="My ChatML", fields=dict(chatml.fields))
    session = session_services.session_text_update(session=session, instruct_template=own)

    def edit():
        TextTemplate.objects.filter(pk=own.pk).update(
            fields={**own.fields, "input_sequence": "<|im_start|>visitor"})

    before, after = _twice_then_edited(client_for(users["designer"]), session, engine_runs, edit, query="")
    assert "<|im_start|>visitor" not in before and "<|im_start|>visitor" in after


def test_a_kept_result_is_a_new_object_each_time(world, engine_runs):
    request = {"strategy": "builtin-st", "host": {"core_available": True},
               "conversation": {"input": [{"id": "u", "role": "user", "content": "Hello"}]}}
    first = assemble(request)
    first.request.messages.clear()  # a caller that changes its result changes no one else's
    second, third = assemble(request), assemble(request)
    assert len(engine_runs) == 1 and second.request.messages and second == third and second is not third


def test_a_refusal_is_not_kept(world, engine_runs):
    request = {"strategy": "no-such-strategy", "conversation": {"input": [{"role": "user", "content": "Hi"}]}}
    for _attempt in range(2):
        with pytest.raises(AssemblyError):
            assemble(request)
    assert len(engine_runs) == 2


def test_another_engine_version_never_reads_an_older_result(world, engine_runs, monkeypatch):
    request = {"strategy": "builtin-st", "host": {"core_available": True},
               "conversation": {"input": [{"id": "u", "role": "user", "content": "Hello"}]}}
    assemble(request)
    monkeypatch.setitem(result_cache._version, "digest", "a-later-deploy")
    assemble(request)
    assert len(engine_runs) == 2


def test_a_result_larger_than_the_limit_is_not_kept(world, engine_runs, settings):
    settings.STUDIO_RESULT_CACHE_MAX_BYTES = 1000
    request = {"strategy": "builtin-st", "host": {"core_available": True},
               "conversation": {"input": [{"id": "u", "role": "user", "content": "Hello"}]}}
    assemble(request)
    assemble(request)
    assert len(engine_runs) == 2


def test_the_engine_version_follows_the_engine_files(tmp_path, monkeypatch):
    (tmp_path / "api.py").write_text("one")
    monkeypatch.setattr(result_cache, "ENGINE", tmp_path)
    monkeypatch.setattr(result_cache, "_version", {})
    first = result_cache.engine_version()
    (tmp_path / "api.py").write_text("two")
    monkeypatch.setattr(result_cache, "_version", {})
    assert result_cache.engine_version() != first


def test_with_the_dummy_backend_every_request_runs_the_engine(world, engine_runs, settings, monkeypatch):
    settings.CACHES = {**settings.CACHES, "results": {"BACKEND": "django.core.cache.backends.dummy.DummyCache"}}
    monkeypatch.setattr(result_cache, "request_key", lambda request: pytest.fail("a request digested"))
    request = {"strategy": "builtin-st", "host": {"core_available": True},
               "conversation": {"input": [{"id": "u", "role": "user", "content": "Hello"}]}}
    assert assemble(request) == assemble(request) and len(engine_runs) == 2


def test_a_session_request_is_keyed_and_its_keys_order_does_not_matter(world):
    from preview_app.previews import chosen_document, session_request

    session = Session.objects.get(pk=world["session"].pk)
    request = session_request(session, chosen_document(session, None, None))
    key = result_cache.request_key(request)
    assert key is not None  # the resources are engine models: each is written with its type and values
    reordered = json.loads(json.dumps(request["strategy"]), object_pairs_hook=lambda pairs: dict(reversed(pairs)))
    assert result_cache.request_key({**request, "strategy": reordered}) == key  # as jsonb hands it back
    preset = request["resources"]["preset"]
    edited = preset.model_copy(update={"prompts": preset.prompts[:-1]})
    assert result_cache.request_key({**request, "resources": {**request["resources"], "preset": edited}}) != key
    assert result_cache.request_key({**request, "unknown": object()}) is None  # not keyed: runs uncached


def test_a_world_book_given_in_another_entry_order_is_another_key():
    """A world book's entries given as an object are read in their order (the tie-break of equal `order`): the
    key keeps it, while a strategy document's key order (normalized by the engine) does not count."""
    def request(uids, strategy):
        return {"strategy": strategy, "resources": {"worldbook": {"entries": {
            uid: {"uid": int(uid), "key": ["gate"], "content": f"entry {uid}", "order": 100} for uid in uids}}}}

    strategy = {"format": "dsh-tavern-request-assembly", "version": 1, "name": "S", "rules": []}
    flipped = dict(reversed(strategy.items()))
    assert result_cache.request_key(request(["1", "2"], strategy)) != result_cache.request_key(
        request(["2", "1"], strategy))
    assert result_cache.request_key(request(["1", "2"], strategy)) == result_cache.request_key(
        request(["1", "2"], flipped))


def test_a_stored_world_book_is_read_once_per_content(world, monkeypatch):
    from assembly.sillytavern import worldbook
    from strategies_app import sillytavern
    from strategies_app.models import WorldBook

    result_cache.caches[result_cache.RESOURCES_ALIAS].clear()
    reads = []
    real = worldbook.parse_worldbook
    monkeypatch.setattr(worldbook, "parse_worldbook", lambda value, path: reads.append(path) or real(value, path))
    book = WorldBook.objects.get(name="Tiny book")
    first = sillytavern.worldbook_model(book, book.entries.all())
    again = sillytavern.worldbook_model(book, book.entries.all())
    assert len(reads) == 1 and first == again and first is not again  # a new object each time
    WorldBookEntry.objects.filter(book=book).update(content="The gate opens at dawn.")
    edited = sillytavern.worldbook_model(book, book.entries.all())
    assert len(reads) == 2 and edited.entries[0].content == "The gate opens at dawn."


def test_the_sessions_macro_variables_edited_give_a_fresh_preview(world, users, engine_runs):
    client, session = client_for(users["designer"]), world["session"]
    PromptEntry.objects.filter(preset_id=world["preset"], identifier="jailbreak").update(
        content="The mood is {{getglobalvar::mood}}.")
    Session.objects.filter(pk=session.pk).update(global_variables={"mood": "calm"})
    before, after = _twice_then_edited(client, session, engine_runs, lambda: (
        Session.objects.filter(pk=session.pk).update(global_variables={"mood": "stormy"})))
    assert "The mood is calm." in before and "The mood is stormy." in after


def test_the_sessions_clock_edited_gives_a_fresh_preview(world, users, engine_runs):
    client, session = client_for(users["designer"]), world["session"]
    PromptEntry.objects.filter(preset_id=world["preset"], identifier="jailbreak").update(content="Now: {{isotime}}.")
    Session.objects.filter(pk=session.pk).update(clock="2026-12-06T15:05:00+08:00")
    before, after = _twice_then_edited(client, session, engine_runs, lambda: (
        Session.objects.filter(pk=session.pk).update(clock="2026-12-06T16:40:00+08:00")))
    assert "Now: 15:05." in before and "Now: 16:40." in after
