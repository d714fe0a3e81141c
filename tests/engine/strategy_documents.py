"""Strategy documents for the engine tests: small valid documents with changes, and rules as normalization writes
them (defaults spelled out by hand, never taken from the code)."""

FORMAT = "dsh-tavern-request-assembly"
DROP = object()  # marks a key to remove from a document
TAVERN_KINDS = ["native-system", "preset", "persona", "character", "worldbook", "history", "input", "phi"]
DEFAULT_PRIORITY = ["preset", "resource", "default"]


def apply_changes(base, changes):
    for key, value in changes.items():
        if value is DROP:
            base.pop(key, None)
        else:
            base[key] = value
    return base


def doc(**changes):
    """A valid minimal strategy, with top-level changes."""
    return apply_changes({"format": FORMAT, "version": 1, "name": "Test", "rules": [{"id": "preset", "kind": "preset"}]},
                  changes)


def rule_doc(**changes):
    """A strategy with one custom rule carrying the changes."""
    return doc(rules=[apply_changes({"id": "r", "kind": "custom"}, changes)])


def layout(**changes):
    return apply_changes({"version": 1, "source": "preset-slots", "identity": "position", "fallback": "source-order",
                   "overrides": []}, changes)


def layout_doc(**changes):
    return doc(layout=layout(**changes))


def override(**changes):
    return apply_changes({"target": "block:a:0", "anchor": "block:b:0", "side": "before", "detach": False}, changes)


def position(**changes):
    return apply_changes({"sourceId": "worldbook", "positionId": "after", "enabled": True, "placement": "list"}, changes)


def rules_of(n):
    return [{"id": f"r{i}", "kind": "custom"} for i in range(n)]


def normalized_rule(rule_id, kind, **changes):
    """A rule as A.2 step 6 writes it, with the defaults spelled out by hand."""
    return apply_changes({"id": rule_id, "kind": kind, "enabled": True, "role": "preserve", "lifetime": "request",
                   "depth": None, "text": "", "name": ""}, changes)
