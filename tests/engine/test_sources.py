"""assembly.sources: a world book entry's block says where the entry asks to go and why it is active."""

from assembly.blocks import Block
from assembly.sillytavern.models import Resources, WorldBook, WorldBookEntry
from assembly.sources import SourceContext, worldbook_blocks


def _blocks(*entries: WorldBookEntry) -> list[Block]:
    ctx = SourceContext(
        strategy={"placement": "modules", "rules": []}, resources=Resources(worldbook=WorldBook(entries=entries)),
        history=[], inputs=[], host_system_text="", variables={}, adaptive_worldbook=False,
        preset_beats_default=True, manual_keys=frozenset(), disabled_keys=frozenset())
    return worldbook_blocks(ctx, {"id": "wb", "kind": "worldbook", "enabled": True})


def test_an_entry_at_depth_keeps_its_role_depth_and_order():
    (block,) = _blocks(WorldBookEntry(uid=7, comment="Lore", content="Text", position="at_depth", depth=2,
                                      role="user", order=30))
    assert block == Block(id="7", source="worldbook", type="text", text="Text", role="user", name="Lore",
                          group="depth", position_id="depth", depth=2, order=30, resource_id="7",
                          activation="enabled: chosen by the host")


def test_an_outlet_entry_is_reference_only_and_names_its_outlet():
    (block,) = _blocks(WorldBookEntry(uid="o", content="Out", position="outlet", outlet_name="side"))
    assert block == Block(id="o", source="worldbook", type="text", text="Out", role="system", name="o",
                          group="outlet", position_id="outlet", resource_id="o",
                          activation="enabled: chosen by the host", reference_only=True,
                          extra=(("outlet_name", "side"),))
