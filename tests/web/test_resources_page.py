"""The resources page (web.md screen 6): every imported resource with its export back to SillyTavern's format for
every role; admins also get the import page and each resource's admin page; names are escaped."""

import re

from tests.web.conftest import client_for


def rows(html, kind):
    section = re.search(rf'<section class="card resources"[^>]*data-kind="{kind}">(.*?)</section>', html, re.S)
    return re.findall(r'<tr data-resource-id="(\d+)">(.*?)</tr>', section.group(1), re.S)


def test_every_role_sees_each_resource_with_its_export(world, users):
    html = client_for(users["qa"]).get("/resources/").content.decode()
    [(preset_id, preset)] = rows(html, "preset")
    assert int(preset_id) == world["preset"] and "Tiny preset" in preset and ">3</td>" in preset  # three prompts
    assert f'href="/api/resources/preset/{preset_id}/export"' in preset
    [(card_id, card)] = rows(html, "character")
    assert int(card_id) == world["character"]
    assert f"/api/resources/character/{card_id}/export?format=png" in card
    assert f'src="/api/resources/character/{card_id}/avatar"' in card  # the card came as a PNG
    assert [r[0] for r in rows(html, "worldbook")] and [r[0] for r in rows(html, "persona")]
    assert "/resources/import/" not in html and "/admin/" not in html
    # the export behind the link gives the file back
    exported = client_for(users["qa"]).get(f"/api/resources/preset/{preset_id}/export")
    assert exported.status_code == 200 and [p["identifier"] for p in exported.json()["prompts"]][:1] == ["main"]


def test_admins_get_the_import_page_and_the_admin_pages(world, users):
    html = client_for(users["admin"]).get("/resources/").content.decode()
    assert 'href="/resources/import/"' in html
    assert f'href="/admin/strategies_app/preset/{world["preset"]}/change/"' in html


def test_an_empty_studio_says_who_imports(users):
    html = client_for(users["designer"]).get("/resources/").content.decode()
    assert html.count("Nothing imported yet; an admin imports SillyTavern files.") == 4


def test_names_are_escaped(world, users):
    from strategies_app import services

    services.persona_import(user=users["admin"], data={"name": "<script>alert(1)</script>", "description": "x"})
    html = client_for(users["qa"]).get("/resources/").content.decode()
    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_two_cards_of_one_name_are_told_apart_by_id_and_import_time(world, users):
    from strategies_app import services
    from strategies_app.models import Character

    first = Character.objects.get(pk=world["character"])
    card = {"spec": "chara_card_v2", "spec_version": "2.0", "data": {"name": first.name, "description": "Another."}}
    services.character_import(user=users["admin"], data=card)
    html = client_for(users["qa"]).get("/resources/").content.decode()
    tells = [re.search(r'data-resource-tell[^>]*>#(\d+) · (\d{4}-\d\d-\d\d \d\d:\d\d)</span>', row).groups()
             for _pk, row in rows(html, "character")]
    assert [int(pk) for pk, _when in tells] == [int(pk) for pk, _row in rows(html, "character")]
    assert len({pk for pk, _when in tells}) == 2
