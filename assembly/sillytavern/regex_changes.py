"""What SillyTavern's regex scripts changed in one request (sillytavern.md §13.1): per changed text, each script that
changed it with the text before and after, so the preview can name the script instead of showing a silent edit."""

from __future__ import annotations

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
    def of(cls, part: str, step: RegexStep) -> RegexChange:
        return cls(part=part, script=step.script, before=step.before, after=step.after)
