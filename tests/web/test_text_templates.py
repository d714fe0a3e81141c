"""Text-completion templates (instruct, context, system prompt, reasoning, and SillyTavern's master export of them)
are imported through the import page and the API like any resource, detected by their keys, recognised when
already stored, and exported back field for field; the built-in templates are there on every installation."""

import json
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from assembly.sillytavern.detect import detect_kind
from assembly.sillytavern.text_presets import detect_text_preset
from strategies_app.models import TextTemplate
from strategies_app.text_builtins import BUILTIN_TEMPLATES
from strategies_app.text_templates import instruct_resource
from tests.web.conftest import client_for

DATA = Path(__file__).parent / "text_data"
ORACLE = Path(__file__).resolve().parents[2].parent / "shared" / "oracle" / "st-text" / "cases.json"


def _raw(name):
    return (DATA / name).read_bytes()


def _upload(client, raw, filename, query="", kind="template"):
    return client.post(f"/api/resources/{kind}/import{query}", {"file": SimpleUploadedFile(filename, raw)})


def _shipped_templates():
    """Every distinct instruct / context / system-prompt template SillyTavern 1.18 ships, as the oracle's cases
    carry them (SillyTavern's own files)."""
    cases = json.loads(ORACLE.read_text())["scenarios"]
    found = {}
    for case in cases:
        resources = case["request"]["resources"]
        for key in ("instruct_template", "context_template", "system_prompt"):
            if key in resources:
                template = resources[key]
                found.setdefault((key, template.get("name")), template)
    return list(found.values())


def test_a_master_export_is_detected_and_stored_as_one_row_per_template(users):
    client = client_for(users["admin"])
    assert detect_kind(json.loads(_raw("master_export.json"))) == "template"
    dry = _upload(client, _raw("master_export.json"), "master.json", "?dry_run=1").json()
    assert dry["creates"] == {"instruct": 1, "context": 1, "sysprompt": 1, "reasoning": 1}
    assert not TextTemplate.objects.filter(builtin=False).exists()
    report = _upload(client, _raw("master_export.json"), "master.json")
    assert report.status_code == 201
    stored = {(t.kind, t.name) for t in TextTemplate.objects.filter(builtin=False)}
    assert stored == {("instruct", "Tavern ChatML"), ("context", "Tavern ChatML"), ("sysprompt", "Tavern roleplay"),
                      ("reasoning", "DeepSeek")}


def _as_written(document):
    """A document as text, keys in their order: two documents are the same file only when this is equal."""
    return json.dumps(document, ensure_ascii=False)


def _exported(client, row):
    answer = client.get(f"/api/resources/template/{row.pk}/export")
    return json.loads(answer.content.decode())  # json keeps the order the export wrote the keys in


# every file of the test data: (file, the templates it holds by kind, as written)
TEST_DATA_FILES = sorted(path.name for path in DATA.glob("*.json"))


def _templates_in(data):
    if any(isinstance(data.get(kind), dict) for kind in ("instruct", "context", "sysprompt", "reasoning")):
        return {kind: data[kind] for kind in ("instruct", "context", "sysprompt", "reasoning") if kind in data}
    return {detect_text_preset(data): data}


@pytest.mark.parametrize("filename", TEST_DATA_FILES)
def test_every_template_file_of_the_test_data_exports_back_field_for_field_in_its_key_order(users, filename):
    client = client_for(users["admin"])
    written = _templates_in(json.loads(_raw(filename)))
    report = _upload(client, _raw(filename), filename)
    assert report.status_code == 201, report.content
    rows = {row.kind: row for row in TextTemplate.objects.filter(builtin=False, kind__in=written)}
    assert set(rows) == set(written)
    for kind, template in written.items():
        exported = _exported(client, rows[kind])
        assert exported == template  # every field, those SillyTavern does not read too
        assert _as_written(exported) == _as_written(template)  # and in the file's key order


def test_the_test_data_holds_every_kind_of_template_file():
    kinds = {filename: set(_templates_in(json.loads(_raw(filename)))) for filename in TEST_DATA_FILES}
    assert set().union(*kinds.values()) == {"instruct", "context", "sysprompt", "reasoning"}
    assert any(len(found) > 1 for found in kinds.values())  # a master export
    assert {"legacy_instruct.json", "legacy_context.json", "legacy_sysprompt.json"} <= set(kinds)


def test_a_template_keeps_its_key_order_through_an_edit(users):
    from strategies_app import services as template_services

    client = client_for(users["admin"])
    _upload(client, _raw("instruct_house_llama.json"), "llama.json")
    row = TextTemplate.objects.get(builtin=False)
    template_services.text_template_update(template=row, changes={"input_suffix": "<|eot_id|>\n"},
                                           expected=template_services.text_template_digest(row.fields))
    written = json.loads(_raw("instruct_house_llama.json"))
    exported = _exported(client, row)
    assert list(exported) == list(written)
    assert exported == {**written, "input_suffix": "<|eot_id|>\n"}


@pytest.mark.parametrize("template", _shipped_templates(), ids=lambda t: str(t.get("name")))
def test_every_shipped_template_imports_and_exports_back(users, template):
    client = client_for(users["admin"])
    raw = json.dumps(template).encode()
    assert detect_kind(template) == "template"
    report = _upload(client, raw, "t.json").json()
    exported = _exported(client, TextTemplate.objects.get(pk=report["id"]))
    # a name a built-in already has ("ChatML") is stored as "ChatML (2)"; every other field is given back, in order
    assert _as_written(exported) == _as_written({**template, "name": report["name"]})
    assert report["name"] in (template["name"], f"{template['name']} (2)")


def test_a_single_instruct_template_comes_through_the_import_page(users):
    client = client_for(users["admin"])
    page = client.post("/resources/import/", {"kind": "auto", "file": SimpleUploadedFile("a.json",
                                                                                         _raw("alpaca_instruct.json"))})
    assert page.status_code == 200
    row = TextTemplate.objects.get(builtin=False)
    assert (row.kind, row.name, row.fields["names_behavior"]) == ("instruct", "House Alpaca", "always")


def test_a_dry_run_keeps_the_upload_and_import_it_uses_the_token(users):
    client = client_for(users["admin"])
    dry = client.post("/resources/import/", {"kind": "auto", "dry_run": "1",
                                             "file": SimpleUploadedFile("a.json", _raw("alpaca_instruct.json"))})
    token = dry.context["report"]["token"]
    assert token and not TextTemplate.objects.filter(builtin=False).exists()
    client.post("/resources/import/", {"kind": "template", "token": token})
    assert TextTemplate.objects.filter(builtin=False, name="House Alpaca").count() == 1


def test_a_template_imported_twice_is_reused_or_kept_under_a_distinct_name(users):
    client = client_for(users["admin"])
    first = _upload(client, _raw("alpaca_instruct.json"), "a.json").json()
    dry = _upload(client, _raw("alpaca_instruct.json"), "a.json", "?dry_run=1").json()
    assert dry["same_as"] == {"id": first["id"], "name": "House Alpaca"}
    reused = _upload(client, _raw("alpaca_instruct.json"), "a.json", "?duplicate=reuse").json()
    assert reused["id"] == first["id"] and reused["creates"] == {"instruct": 0}
    kept = _upload(client, _raw("alpaca_instruct.json"), "a.json", "?duplicate=keep").json()
    assert kept["name"] == "House Alpaca (2)"
    assert client.get(f"/api/resources/template/{kept['id']}/export").json()["name"] == "House Alpaca (2)"


def test_a_legacy_instruct_template_is_read_as_sillytavern_migrates_it(users):
    client = client_for(users["admin"])
    report = _upload(client, _raw("legacy_instruct.json"), "old.json").json()
    assert report["creates"] == {"instruct": 1, "sysprompt": 1}
    assert any("separator_sequence" in note for note in report["notes"])
    instruct = TextTemplate.objects.get(kind="instruct", builtin=False)
    prompt = TextTemplate.objects.get(kind="sysprompt", builtin=False)
    assert prompt.name == "[Migrated] Old Vicuna"
    assert prompt.fields["content"] == "A chat between a curious user and an assistant."
    read = instruct_resource(instruct.fields)
    assert read["output_suffix"] == "</s>\n" and read["names_behavior"] == "force"
    assert "system_prompt" not in read and "separator_sequence" not in read
    assert _as_written(_exported(client, instruct)) == _as_written(json.loads(_raw("legacy_instruct.json")))


def test_a_template_with_a_field_of_the_wrong_type_is_refused_naming_it(users):
    client = client_for(users["admin"])
    bad = json.loads(_raw("alpaca_instruct.json"))
    bad["input_suffix"] = ["not", "a", "string"]
    answer = _upload(client, json.dumps(bad).encode(), "bad.json")
    assert answer.status_code == 422
    assert "input_suffix" in answer.json()["error"]
    assert not TextTemplate.objects.filter(builtin=False).exists()


def test_the_built_in_templates_are_stored_read_only(users):
    names = {(t.kind, t.name) for t in TextTemplate.objects.filter(builtin=True)}
    assert names == {(kind, fields["name"]) for kind, fields in BUILTIN_TEMPLATES}
    for family in ("ChatML", "Llama 3", "Mistral", "Gemma", "Alpaca", "Vicuna", "Metharme", "Plain story"):
        assert ("instruct", family) in names
    assert ("context", "Plain story") in names


def test_qa_may_not_import_templates(users):
    answer = _upload(client_for(users["qa"]), _raw("alpaca_instruct.json"), "a.json")
    assert answer.status_code == 403


def test_the_resources_page_lists_templates_with_their_export(users):
    client = client_for(users["admin"])
    _upload(client, _raw("master_export.json"), "master.json")
    page = client.get("/resources/").content.decode()
    row = TextTemplate.objects.get(kind="instruct", name="Tavern ChatML")
    assert 'data-kind="template"' in page and f"/api/resources/template/{row.pk}/export" in page


def test_a_session_exports_its_templates_as_the_master_export_they_came_from(users):
    from preview_app import services as session_services
    from tests.web.text_sessions import make_text_session

    client = client_for(users["admin"])
    _upload(client, _raw("master_export.json"), "master.json")
    session = make_text_session(users["designer"], users["admin"])
    rows = {t.kind: t for t in TextTemplate.objects.filter(builtin=False)}
    session_services.session_text_update(session=session, instruct_template=rows["instruct"],
                                         context_template=rows["context"], sysprompt_template=rows["sysprompt"])
    exported = client_for(users["qa"]).get(f"/sessions/{session.pk}/text/templates.json").json()
    master = json.loads(_raw("master_export.json"))
    assert _as_written(exported) == _as_written({kind: master[kind] for kind in ("instruct", "context", "sysprompt")})
    assert detect_kind(exported) == "template"


def test_the_commands_import_and_export_a_template_file(users, tmp_path):
    import io

    from django.core.management import call_command

    out = io.StringIO()
    call_command("import_st", "--template", str(DATA / "alpaca_instruct.json"), stdout=out)
    report = json.loads(out.getvalue())
    assert report["creates"] == {"instruct": 1}
    out = io.StringIO()
    call_command("export_st", "--template", str(report["id"]), stdout=out)
    assert json.loads(out.getvalue()) == json.loads(_raw("alpaca_instruct.json"))


def test_a_master_export_imported_again_reuses_every_stored_template(users):
    client = client_for(users["admin"])
    _upload(client, _raw("master_export.json"), "master.json")
    dry = _upload(client, _raw("master_export.json"), "master.json", "?dry_run=1").json()
    assert dry["same_as"]["name"] == "Tavern ChatML"
    again = _upload(client, _raw("master_export.json"), "master.json", "?duplicate=reuse").json()
    assert again["creates"] == {"instruct": 0, "context": 0, "sysprompt": 0, "reasoning": 0}
    assert TextTemplate.objects.filter(builtin=False).count() == 4


def test_a_template_stored_as_a_plain_object_is_read_as_that_object(users):
    """Rows written before the key order was kept (an object, not its pairs) read as they were stored."""
    from django.db import connection

    client = client_for(users["admin"])
    report = _upload(client, _raw("sysprompt_house_narrator.json"), "s.json").json()
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {TextTemplate._meta.db_table} SET fields = %s WHERE id = %s",
                       ['{"name": "House narrator", "content": "Narrate.", "post_history": ""}', report["id"]])
    row = TextTemplate.objects.get(pk=report["id"])
    assert row.fields == {"name": "House narrator", "content": "Narrate.", "post_history": ""}
    assert _exported(client, row)["content"] == "Narrate."


def test_the_admin_shows_a_template_s_fields_in_the_file_s_order(users):
    client = client_for(users["admin"])
    _upload(client, _raw("instruct_house_llama.json"), "llama.json")
    row = TextTemplate.objects.get(builtin=False)
    page = client.get(f"/admin/strategies_app/texttemplate/{row.pk}/change/")
    assert page.status_code == 200
    shown = page.context["adminform"].form.initial["fields"]
    assert list(shown) == list(json.loads(_raw("instruct_house_llama.json")))
    chatml = TextTemplate.objects.get(kind="instruct", name="ChatML", builtin=True)
    read_only = client.get(f"/admin/strategies_app/texttemplate/{chatml.pk}/change/").content.decode()
    assert "&lt;|im_start|&gt;user" in read_only  # a built-in's fields shown read-only, as JSON
