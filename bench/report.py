"""Plain-text tables for the benchmark output."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Table:
    title: str
    columns: list[str]
    rows: list[list[str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(self, *cells: object) -> None:
        if len(cells) != len(self.columns):
            raise ValueError(f"{self.title}: row has {len(cells)} cells for {len(self.columns)} columns")
        self.rows.append([str(cell) for cell in cells])

    def render(self) -> str:
        widths = [max([len(column)] + [len(row[i]) for row in self.rows]) for i, column in enumerate(self.columns)]
        # Figures align right so their digits line up; text (labels, targets) aligns left.
        numeric = [bool(self.rows) and all(row[i][:1].isdigit() for row in self.rows) for i in range(len(self.columns))]

        def line(cells: list[str]) -> str:
            return "  ".join(cell.rjust(width) if is_numeric else cell.ljust(width)
                             for cell, width, is_numeric in zip(cells, widths, numeric, strict=True)).rstrip()

        out = [self.title, line(self.columns), line(["-" * width for width in widths])]
        out.extend(line(row) for row in self.rows)
        out.extend(f"  {note}" for note in self.notes)
        return "\n".join(out)


def format_rate(count: float, seconds: float) -> str:
    if seconds <= 0:
        return "n/a"
    rate = count / seconds
    for unit, scale in (("M", 1e6), ("k", 1e3)):
        if rate >= scale:
            return f"{rate / scale:.2f}{unit}"
    return f"{rate:.0f}"
