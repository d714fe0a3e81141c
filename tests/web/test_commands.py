"""Management commands (web.md): import_st, export_st, goldens check|approve, seed_demo."""

import io
import json

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError

from assembly.sillytavern.card import import_character
from assembly.sillytavern.preset import import_preset
from assembly.sillytavern.worldbook import import_worldbook
from preview_app.models import GoldenSnapshot, Session, SessionEvent
from strategies_app.models import Character, Persona, Preset, PromptEntry, Strategy, StrategyRevision, WorldBook


def run(name, *args):
    out = io.StringIO()
    call_command(name, *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def run_failing(name, *args):
    out = io.StringIO()
    with pytest.raises(SystemExit) as exited:
        call_command(name, *args, stdout=out, stderr=io.StringIO())
    assert exited.value.code == 1
    return out.getvalue()


def counts():
    return tuple(m.objects.count() for m in (Preset, PromptEntry, Character, Persona, WorldBook, Strategy,
                                              StrategyRevision, Session, SessionEvent, GoldenSnapshot))


# ---------------------------------------------------------------------------------------------- import_st / export_st


def test_import_st_dry_run_then_import_then_export(shared_fixtures, tmp_path, users):
    path = shared_fixtures / "sillytavern" / "st_cc_preset_Default.json"
    before = counts()
    dry = json.loads(run("import_st", "--preset", str(path), "--dry-run"))
    expected = import_preset(json.loads(path.read_bytes()))
    assert dry["dry_run"] is True and dry["creates"] == {"preset": 1, "prompt_entries": len(expected.prompts)}
    assert counts() == before

    report = json.loads(run("import_st", "--preset", str(path), "--owner", "admin-user"))
    preset = Preset.objects.get(pk=report["id"])
    assert preset.name == "st_cc_preset_Default" and preset.owner == users["admin"]

    out = tmp_path / "preset.json"
    run("export_st", "--preset", str(preset.pk), "--output", str(out))
    assert import_preset(json.loads(out.read_text())) == expected


def test_import_st_card_png_and_export_png(shared_fixtures, tmp_path):
    path = shared_fixtures / "sillytavern" / "st_card_Seraphina.png"
    report = json.loads(run("import_st", "--card", str(path)))
    assert report["name"] == "Seraphina" and report["creates"] == {"character": 1, "avatar": 1}
    out = tmp_path / "card.png"
    run("export_st", "--card", str(report["id"]), "--png", "--output", str(out))
    assert import_character(out.read_bytes()) == import_character(path.read_bytes())
    printed = json.loads(run("export_st", "--card", str(report["id"])))
    assert printed["spec"] == "chara_card_v3" and printed["data"]["name"] == "Seraphina"  # its ccv3 chunk: V3 stays V3


def test_import_st_worldbook_and_strategy(shared_fixtures, tmp_path):
    path = shared_fixtures / "sillytavern" / "st_worldinfo_Eldoria.json"
    report = json.loads(run("import_st", "--worldbook", str(path)))
    exported = json.loads(run("export_st", "--worldbook", str(report["id"])))
    assert import_worldbook(exported) == import_worldbook(json.loads(path.read_bytes()))

    document = json.loads(run("export_st", "--strategy", "builtin-st"))
    assert document["id"] == "builtin-st"
    strategy_file = tmp_path / "s.json"
    strategy_file.write_text(json.dumps(document))
    imported = json.loads(run("import_st", "--strategy", str(strategy_file)))
    assert imported["id"] == "builtin-st-2"
    assert Strategy.objects.get(slug="builtin-st-2").draft == Strategy.objects.get(slug="builtin-st").draft


def test_import_st_refuses_a_bad_file_with_the_error_json_and_stores_nothing(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"prompts": [{"identifier": "a", "role": "narrator"}]}))
    before = counts()
    error = json.loads(run_failing("import_st", "--preset", str(path)))
    assert (error["ok"], error["code"], error["status"]) == (False, "IMPORT_INVALID", 400)
    assert "prompts[0].role" in error["error"]
    missing = json.loads(run_failing("import_st", "--worldbook", str(tmp_path / "nowhere.json")))
    assert missing["code"] == "INPUT_UNREADABLE"
    assert counts() == before


def test_export_st_of_an_unknown_id_exits_1():
    error = json.loads(run_failing("export_st", "--preset", "999"))
    assert error["code"] == "NOT_FOUND" and error["status"] == 404


# ---------------------------------------------------------------------------------------------- goldens


def test_goldens_approve_then_check_then_differ(world):
    session = world["session"]
    GoldenSnapshot.objects.all().delete()
    out = run("goldens", "approve", "--session", str(session.pk), "--user", "qa-user")
    golden = GoldenSnapshot.objects.get()
    assert f"approved golden {golden.pk}" in out and golden.approved_by.username == "qa-user"
    assert golden.revision == session.applied_revision

    assert run("goldens", "check").splitlines()[-1] == "1 golden snapshot(s), 0 differ"

    session.current_input = "A different question"
    session.save()
    out = run_failing("goldens", "check", "--session", str(session.pk))
    assert out.startswith("DIFFERS  session")
    assert '+' in out and "A different question" in out
    assert out.splitlines()[-1] == "1 golden snapshot(s), 1 differ"


def test_goldens_approve_without_an_applied_strategy_needs_one(users):
    from preview_app.services import session_create

    session = session_create(user=users["designer"], name="Off")
    with pytest.raises(CommandError, match="no applied strategy"):
        run("goldens", "approve", "--session", str(session.pk))
    run("goldens", "approve", "--session", str(session.pk), "--strategy", "builtin-native-slots")
    assert GoldenSnapshot.objects.get().session == session


# ---------------------------------------------------------------------------------------------- seed_demo


def test_seed_demo_builds_the_demo_and_is_idempotent():
    first = run("seed_demo")
    users = get_user_model().objects
    for name in ("admin", "designer", "qa"):
        assert f"user '{name}' (role {name}): password " in first
        assert list(users.get(username=name).groups.values_list("name", flat=True)) == [name]
    password = first.split("user 'qa' (role qa): password ")[1].split()[0]
    assert users.get(username="qa").check_password(password)
    assert users.get(username="admin").is_superuser and not users.get(username="designer").is_staff

    snapshot = counts()
    # The preset defines 11 prompts; SillyTavern re-adds the built-in definitions it lacks (nsfw,
    # enhanceDefinitions), as the engine's importer does: 13 entries.
    assert snapshot[:5] == (1, 13, 1, 1, 1)
    chats, texts = Session.objects.filter(completion="chat"), Session.objects.filter(completion="text")
    assert len(chats) == 2 and all(s.events.count() >= 4 for s in chats)
    assert all(s.applied_document is not None for s in chats)
    text = texts.get()  # a new user sees text completion too: the card in built-in templates
    assert (text.instruct_template.name, text.context_template.name, text.sysprompt_template.name) == (
        "ChatML", "Chat", "Role-play") and text.instruct_template.builtin and text.instruct_enabled
    assert text.character.name == "Mira Vell" and text.events.count() == 3
    assert Character.objects.get().avatar  # the card came as a PNG
    assert GoldenSnapshot.objects.count() == 1

    again = run("seed_demo")
    assert "password unchanged" in again and "password " + password not in again
    assert counts() == snapshot
    assert users.get(username="qa").check_password(password)


def test_seed_demo_goldens_match_and_a_newcomer_sees_the_demo(client):
    run("seed_demo")
    assert run("goldens", "check").splitlines()[-1] == "1 golden snapshot(s), 0 differ"
    client.force_login(get_user_model().objects.get(username="designer"))
    home = client.get("/")
    assert b"Demo: first night at the lighthouse" in home.content and b"Mira Vell" in home.content
    for session in Session.objects.filter(completion="chat"):
        assert client.get(f"/api/sessions/{session.pk}/preview").status_code == 200
    text = Session.objects.get(completion="text")
    assert b"Demo: the lamp room (text completion" in home.content
    prompt = client.get(f"/sessions/{text.pk}/text/").content.decode()
    assert "&lt;|im_start|&gt;system" in prompt and "Mind the stairs" in prompt


def test_the_sillytavern_demo_session_speaks_sillytavern_and_shows_no_ids(client):
    import re

    run("seed_demo")
    client.force_login(get_user_model().objects.get(username="designer"))
    session = Session.objects.get(applied_strategy__slug="builtin-st")
    assert "advanced backend" not in session.name  # dsh's word, on SillyTavern work
    page = client.get(f"/sessions/{session.pk}/").content.decode()
    history = page.split('data-list="history"', 1)[1].split("</ol>", 1)[0]
    shown = re.sub(r"<[^>]+>", " ", history)  # data-* hooks keep the ids; the words never show them
    assert session.events.filter(source__kind="request-assembly").exists()
    for event in session.events.all():
        assert event.message_id not in shown
    assert not re.search(r"[0-9a-f]{8}-[0-9a-f]{4}-", shown) and "strategy revision record" not in shown
    assert "Studio note" in shown and "hidden message in SillyTavern" in shown
    assert "Built with “Preset slots first (advanced)”, revision " in shown
    assert "the studio's hidden note of the strategy revision" in page and "what the host records" not in page
    preview = client.get(f"/sessions/{session.pk}/preview/").content.decode()
    rows = re.sub(r"<[^>]+>", " ", preview.split('<table class="request">', 1)[1].split("</table>", 1)[0])
    assert not any(f"history {event.message_id}" in rows for event in session.events.all())
    appended = preview.split('id="events-title"', 1)[1].split("</section>", 1)[0]
    assert "a studio note, hidden like SillyTavern&#x27;s hidden messages" in appended


def test_seed_demo_refuses_production(settings):
    settings.PRODUCTION = True
    with pytest.raises(CommandError, match="production"):
        run("seed_demo")
