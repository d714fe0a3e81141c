"""Rule lists the reference's test cases start from (shared by several test modules)."""

NATIVE_RULES = (  # reference A.13.4: the native rule set with module roles
    {"id": "native-system", "kind": "native-system", "role": "preserve"},
    {"id": "preset", "kind": "preset", "role": "system"},
    {"id": "persona", "kind": "persona", "role": "system"},
    {"id": "character", "kind": "character", "role": "system"},
    {"id": "worldbook", "kind": "worldbook", "role": "system"},
    {"id": "phi", "kind": "phi", "role": "system"},
    {"id": "history", "kind": "history"},
    {"id": "input", "kind": "input"},
)
