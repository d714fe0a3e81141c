"""SillyTavern: its files (preset, card, world book, chat, settings), its world info scan and its prompt pipeline.

One concept per module: `vocabulary` (names and numbers), `models` (the resource models), the readers and writers
`preset`, `worldbook`, `card`, `png`, `chat`, `notes`, `settings`, `resource_set`; world info (`worldinfo*`); the
pipeline steps (`messages`, `steps`, `examples`, `budget`) and the `st` placement's request (`request`).
"""
