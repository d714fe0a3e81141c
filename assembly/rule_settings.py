"""The settings a rule may ask of its source, checked before anything resolves (reference A.10 job planning).

A source declares the roles, lifetimes and depth it supports and whether it takes more than one rule; a rule asking
for something its source does not offer is refused instead of being silently ignored.
"""

from __future__ import annotations

from typing import Any

from assembly.errors import AssemblyError


def check_host_rule(rule: dict[str, Any], index: int) -> None:
    """Reference A.10.1: the host's own messages keep their roles, live for the request and have no depth, so a rule
    asking otherwise is refused instead of being ignored."""
    role, lifetime, depth = rule.get("role"), rule.get("lifetime"), rule.get("depth")
    if role in (None, "preserve") and lifetime in (None, "request") and depth is None:
        return  # nearly every rule: the refusal's wording is made only for one that asks more
    asked = [f"{name} {value!r}" for name, value, allowed in (("role", role, "preserve"),
                                                              ("lifetime", lifetime, "request"))
             if value not in (None, allowed)]
    if depth is not None:
        asked.append(f"depth {depth!r}")
    raise AssemblyError("ASSEMBLY_RULE_UNSUPPORTED",
                        f"rules[{index}] ({rule['id']}): Unsupported rule settings for {rule['kind']}: "
                        f"{', '.join(asked)} (the host's messages keep role preserve, lifetime request and no depth)",
                        detail={"ruleId": rule["id"], "sourceId": rule["kind"]})


def check_preset_rules(rules: list[dict[str, Any]]) -> None:
    """The preset's prompts are read for each request; its source declares no retained snapshots, so a preset rule
    asking for one is refused before anything resolves."""
    for index, rule in enumerate(rules):
        if rule["enabled"] and rule["kind"] == "preset" and rule.get("lifetime") == "snapshot":
            raise AssemblyError("ASSEMBLY_RULE_UNSUPPORTED",
                                f"rules[{index}] ({rule['id']}): Unsupported rule settings for preset: lifetime "
                                "'snapshot' (the preset is read for each request)",
                                detail={"ruleId": rule["id"], "sourceId": "preset"})


def refuse_second_rule(rule: dict[str, Any], index: int, first: dict[str, Any]) -> None:
    """Reference A.10: one source, one rule (text rules: as many as the designer writes); a second would silently
    emit nothing."""
    raise AssemblyError("ASSEMBLY_DUPLICATE_SOURCE_RULE",
                        f"rules[{index}] ({rule['id']}): a second enabled rule for the source {rule['kind']!r} "
                        f"(the first is {first['id']!r})", detail={"ruleId": rule["id"], "sourceId": rule["kind"]})
