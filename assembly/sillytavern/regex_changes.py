"""What SillyTavern's regex scripts changed in one request (sillytavern.md §13.1): per changed text, each script that
changed it with the text before and after, so the preview can name the script instead of showing a silent edit."""

# No `from __future__ import annotations`: pydantic reads these annotations as objects, where it would compile
# each string one at a time when a fresh process imports the engine.

from typing import Self

from pydantic import BaseModel, ConfigDict


class RegexStep(BaseModel):
    """One script that changed one text."""

    model_config = ConfigDict(frozen=True)
    script: str  # the script's name
    before: str
    after: str


class RegexChange(BaseModel):
    """One script that changed the text of one part (a node id of the request's `parts`), in the order applied."""

    part: str
    script: str
    before: str
    after: str

    @classmethod
    def of(cls, part: str, step: RegexStep) -> Self:
        return cls(part=part, script=step.script, before=step.before, after=step.after)
