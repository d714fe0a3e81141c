"""Strategies: optimistic concurrency of the working draft, revisions, built-ins, and A.2 import / export."""

import json

import pytest

from assembly.catalogue import builtin_strategies
from assembly.strategy import normalize_strategy, strategy_revision
from strategies_app import services
from strategies_app.models import Strategy, StrategyRevision
from studio.errors import ServiceError
from tests.web.conftest import client_for, make_user

A2 = {"format": "dsh-tavern-request-assembly", "version": 1, "name": "Lore first", "backend": "native",
      "placement": "native-roles",
      "rules": [{"id": "worldbook", "kind": "worldbook"}, {"id": "history", "kind": "history"},
                {"id": "input", "kind": "input"}]}


def put_draft(client, slug, version, draft):
    return client.put(f"/api/strategies/{slug}/draft", json.dumps({"version": version, "draft": draft}),
                      content_type="application/json")


@pytest.fixture
def mine(users):
    return services.strategy_create(user=users["designer"], name=A2["name"], document=A2)


def test_two_edits_from_the_same_version_the_second_gets_409_and_the_first_survives(users, mine):
    designer_tab, admin_tab = client_for(users["designer"]), client_for(users["admin"])
    seen = client_for(users["designer"]).get(f"/api/strategies/{mine.slug}").json()
    assert seen["version"] == 1

    first = put_draft(designer_tab, mine.slug, seen["version"], {**seen["draft"], "name": "First edit"})
    assert first.status_code == 200 and first.json()["version"] == 2

    second = put_draft(admin_tab, mine.slug, seen["version"], {**seen["draft"], "name": "Second edit"})
    assert second.status_code == 409
    error = second.json()
    assert error["code"] == "STRATEGY_VERSION_CONFLICT" and error["error"].startswith("version:")
    # The answer carries the fresh state, so the second editor can merge and retry.
    assert error["detail"]["version"] == 2 and error["detail"]["draft"]["name"] == "First edit"

    mine.refresh_from_db()
    assert (mine.version, mine.name, mine.draft["name"]) == (2, "First edit", "First edit")
    retry = put_draft(admin_tab, mine.slug, 2, {**seen["draft"], "name": "Second edit"})
    assert retry.status_code == 200 and retry.json()["version"] == 3


def test_the_service_refuses_a_stale_version_even_if_the_row_was_read_before_the_edit(users, mine):
    stale_copy = Strategy.objects.get(pk=mine.pk)
    services.draft_update(strategy=mine, user=users["designer"], document={**A2, "name": "One"}, expected_version=1)
    with pytest.raises(ServiceError) as refused:
        services.draft_update(strategy=stale_copy, user=users["designer"], document={**A2, "name": "Two"},
                              expected_version=1)
    assert refused.value.status == 409
    assert Strategy.objects.get(pk=mine.pk).draft["name"] == "One"


@pytest.mark.parametrize(("draft", "status", "path"), [
    ({**A2, "backend": "sideways"}, 400, "backend"),
    ({**A2, "rules": [{"id": "c", "kind": "custom", "text": "x" * (512 * 1024 + 1)}]}, 413, "rules[0].text"),
    ({**A2, "rules": [{"id": "a", "kind": "history"}, {"id": "a", "kind": "input"}]}, 400, "rules[1].id"),
])
def test_an_invalid_draft_is_refused_naming_the_field_and_nothing_is_written(users, mine, draft, status, path):
    response = put_draft(client_for(users["designer"]), mine.slug, 1, draft)
    assert response.status_code == status
    error = response.json()
    assert error["code"] == "STRATEGY_INVALID" and error["detail"]["path"] == path
    mine.refresh_from_db()
    assert mine.version == 1 and mine.draft == normalize_strategy(A2)


def test_a_missing_version_is_400(users, mine):
    response = client_for(users["designer"]).put(f"/api/strategies/{mine.slug}/draft",
                                                 json.dumps({"draft": A2}), content_type="application/json")
    assert response.status_code == 400 and response.json()["detail"]["path"] == "version"


def test_saving_a_revision_freezes_the_draft_and_later_edits_do_not_touch_it(users, mine):
    client = client_for(users["designer"])
    saved = client.post(f"/api/strategies/{mine.slug}/revisions", {"note": "v1"}, content_type="application/json")
    assert saved.status_code == 201
    sha = saved.json()["revision"]
    assert sha == strategy_revision(A2)
    again = client.post(f"/api/strategies/{mine.slug}/revisions", {"note": "same"}, content_type="application/json")
    assert again.status_code == 200 and again.json() == {"ok": True, "id": mine.slug, "revision": sha,
                                                         "created": False}
    put_draft(client, mine.slug, 1, {**A2, "name": "Changed"})
    revision = StrategyRevision.objects.get(strategy=mine, revision=sha)
    assert revision.document == normalize_strategy(A2) and revision.note == "v1"
    detail = client.get(f"/api/strategies/{mine.slug}").json()
    assert [r["revision"] for r in detail["revisions"]] == [sha]


def test_builtins_are_rows_equal_to_the_engines_and_read_only(users):
    for builtin in builtin_strategies():
        row = Strategy.objects.get(slug=builtin.pop("id"))
        assert row.builtin and row.draft == builtin
        assert list(row.revisions.values_list("revision", flat=True)) == [strategy_revision(builtin)]
    client = client_for(users["admin"])
    assert put_draft(client, "builtin-st", 1, A2).status_code == 409
    assert client.post("/api/strategies/builtin-st/revisions").status_code == 409
    copy = client.post("/api/strategies/builtin-st/copy", {"name": "My ST"}, content_type="application/json")
    assert copy.status_code == 201
    copied = Strategy.objects.get(slug=copy.json()["id"])
    assert not copied.builtin and copied.owner == users["admin"] and copied.name == "My ST"
    assert copied.draft == {**Strategy.objects.get(slug="builtin-st").draft, "name": "My ST"}


def test_list_shows_backend_placement_and_latest_revision(users, mine):
    rows = {row["id"]: row for row in client_for(users["qa"]).get("/api/strategies").json()}
    assert rows["builtin-st"]["backend"] == "core" and rows["builtin-st"]["placement"] == "st"
    assert rows["builtin-st"]["latest_revision"] == strategy_revision(
        Strategy.objects.get(slug="builtin-st").draft)
    assert rows[mine.slug] == {"id": mine.slug, "name": "Lore first", "names": {"en": "Lore first",
                                                                               "zh-hans": "Lore first"},
                               "builtin": False, "backend": "native", "placement": "native-roles", "version": 1, "latest_revision": None}


def test_hidden_builtins_are_left_out_of_the_list(users):
    Strategy.objects.filter(slug="builtin-native-roles").update(visible=False)
    ids = [row["id"] for row in client_for(users["qa"]).get("/api/strategies").json()]
    assert "builtin-native-roles" not in ids and "builtin-st" in ids


def test_export_then_import_gives_the_same_document(users, mine):
    client = client_for(users["designer"])
    exported = client.get(f"/api/strategies/{mine.slug}?format=export")
    assert exported.status_code == 200 and exported.json() == {**normalize_strategy(A2), "id": mine.slug}

    dry = client.post("/api/strategies?dry_run=1", exported.content, content_type="application/json")
    assert dry.status_code == 200
    report = dry.json()
    assert report["dry_run"] is True and report["creates"] == {"strategy": 1, "revision": 1}
    assert report["items"] == ["worldbook (worldbook)", "history (history)", "input (input)"]
    assert report["id"] == f"{mine.slug}-2" and "taken" in report["notes"][0]
    assert Strategy.objects.filter(builtin=False).count() == 1

    created = client.post("/api/strategies", exported.content, content_type="application/json")
    assert created.status_code == 201
    imported = Strategy.objects.get(slug=created.json()["id"])
    assert imported.draft == mine.draft and imported.owner == users["designer"]
    assert list(imported.revisions.values_list("revision", flat=True)) == [strategy_revision(A2)]


def test_a_designer_cannot_edit_another_designers_strategy(users, mine):
    other = make_user("other-designer", "designer")
    response = put_draft(client_for(other), mine.slug, 1, {**A2, "name": "Hijack"})
    assert response.status_code == 403 and response.json()["code"] == "FORBIDDEN"
    mine.refresh_from_db()
    assert mine.name == "Lore first"


def test_the_strategies_page_imports_an_exported_file_and_opens_the_editor(users, mine):
    from django.core.files.uploadedfile import SimpleUploadedFile

    client = client_for(users["designer"])
    assert 'data-strategy-import' in client.get("/strategies/").content.decode()
    exported = client.get(f"/api/strategies/{mine.slug}?format=export").content
    answer = client.post("/strategies/import/", {"file": SimpleUploadedFile("lore.json", exported)}, follow=True)
    slug = f"{mine.slug}-2"  # the exported id is taken: a free one is made, and the page says so
    assert answer.redirect_chain[-1] == (f"/strategies/{slug}/edit/", 303)
    page = answer.content.decode()
    assert "Imported “Lore first” with its first revision." in page and "is taken" in page
    imported = Strategy.objects.get(slug=slug)
    assert imported.draft == mine.draft and imported.owner == users["designer"]
    assert imported.revisions.count() == 1


@pytest.mark.parametrize(("content", "words"), [
    (b"{not json", "file: not JSON"),
    (json.dumps({**A2, "rules": "none"}).encode(), "rules must be a list"),
])
def test_a_refused_strategy_file_stores_nothing_and_the_list_says_why(users, content, words):
    from django.core.files.uploadedfile import SimpleUploadedFile

    before = Strategy.objects.count()
    answer = client_for(users["designer"]).post("/strategies/import/", {"file": SimpleUploadedFile("x.json", content)})
    assert answer.status_code == 400
    page = answer.content.decode()
    assert "data-import-refusal" in page and words in page and "The strategy file was not imported" in page
    assert Strategy.objects.count() == before


def test_qa_may_not_import_a_strategy(users):
    from django.core.files.uploadedfile import SimpleUploadedFile

    client = client_for(users["qa"])
    assert "data-strategy-import" not in client.get("/strategies/").content.decode()
    answer = client.post("/strategies/import/", {"file": SimpleUploadedFile("x.json", json.dumps(A2).encode())})
    assert answer.status_code == 403 and Strategy.objects.filter(builtin=False).count() == 0


def test_an_import_that_loses_its_slug_to_a_racing_writer_takes_the_next_free_one(users, monkeypatch):
    real, calls = services._free_slug, []

    def free_slug(wanted):  # the write's own look is stale: another import took the slug just before it
        calls.append(wanted)
        return "lore-first" if len(calls) == 2 else real(wanted)

    monkeypatch.setattr(services, "_free_slug", free_slug)
    services.strategy_create(user=users["admin"], name="Lore first", document=A2)  # the racing writer
    calls.clear()
    report = services.strategy_import(user=users["designer"], document=A2)
    assert len(calls) == 3  # the report's look, the stale one refused by the unique index, the retry
    assert report.id == "lore-first-2" and report.notes == []  # the file gave no id: nothing to say of it
    assert Strategy.objects.get(slug="lore-first-2").owner == users["designer"]


def test_an_import_without_an_id_says_nothing_of_one_and_one_with_a_taken_id_says_so(users, mine):
    fresh = services.strategy_import(user=users["designer"], document={**A2, "name": "Brand new"})
    assert (fresh.id, fresh.notes) == ("brand-new", [])
    taken = services.strategy_import(user=users["designer"], document={**A2, "id": mine.slug})
    assert taken.notes == [f"The file's id “{mine.slug}” is taken or is not a valid id, so the strategy is stored "
                           f"as “{taken.id}”."]
