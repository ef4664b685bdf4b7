"""A borderless table whose columns stay on one line but the last, which wraps: laid out as
Rich's `Table` lays it out, in one pass over the rows.

Rich's `Table` measures and renders every cell through its general layout machinery, about a
millisecond per row: `consort log` on a ledger of a few thousand events took seconds. Here the
widths follow Rich's rule for this shape (columns at their widest cell; when the table is too
wide, the wrapping column gives up the excess), the header is drawn by Rich itself at those
widths, and each row's last cell is wrapped with Rich's own `Text.wrap`, so the output is the
same, byte for byte, as `Table` prints (`tests/unit/cli/test_table.py` compares them over many
widths). A terminal too narrow for the one-line columns is left to `Table` itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from rich.console import Console
    from rich.segment import Segment
    from rich.table import Table

GAP = 2  # spaces after every column but the last


@dataclass(frozen=True)
class Column:
    header: str
    justify: Literal["left", "right"] = "left"


def rich_table(columns: Sequence[Column], rows: Sequence[Sequence[str]]) -> Table:
    """The same table as Rich's `Table` (cells are console markup)."""
    from rich.table import Table

    grid = Table(box=None, pad_edge=False, padding=(0, GAP, 0, 0), header_style="bold")
    for index, column in enumerate(columns):
        grid.add_column(column.header, no_wrap=index < len(columns) - 1, justify=column.justify)
    for row in rows:
        grid.add_row(*row)
    return grid


def print_table(console: Console, columns: Sequence[Column], rows: Sequence[Sequence[str]]) -> None:
    """Print `rows` (cells are console markup, one per column) under the columns' headers."""
    from rich.cells import cell_len
    from rich.segment import Segment, Segments
    from rich.table import Table

    texts = [[console.render_str(cell, highlight=False) for cell in row] for row in rows]
    headers = [console.render_str(column.header, highlight=False) for column in columns]
    last = len(columns) - 1
    if any("\n" in text.plain for text in (*headers, *(t for row in texts for t in row))) or any(
        text.spans for row in texts for text in row[:last]
    ):
        console.print(rich_table(columns, rows))  # lines and styles of their own: Rich's layout
        return
    natural = [
        max(cell_len(text.plain) for text in (headers[index], *(row[index] for row in texts)))
        for index in range(len(columns))
    ]
    room = console.width - sum(natural[:last]) - GAP * last
    if room < 1 or any(width > console.width - GAP for width in natural[:last]):
        console.print(rich_table(columns, rows))  # Rich crops the one-line columns too
        return
    widths = [*natural[:last], min(natural[last] or 1, room)]
    head = Table(box=None, pad_edge=False, padding=(0, GAP, 0, 0), header_style="bold")
    for index, column in enumerate(columns):
        head.add_column(
            column.header, no_wrap=index < last, justify=column.justify, width=widths[index]
        )
    console.print(head)
    gap = " " * GAP
    indent = Segment(" " * (sum(widths[:last]) + GAP * last))
    out: list[Segment] = []
    for row in texts:
        first = "".join(
            _aligned(text.plain, width - cell_len(text.plain), column.justify) + gap
            for text, width, column in zip(row[:last], widths, columns, strict=False)
        )
        lines = row[last].wrap(console, widths[last], justify="left", overflow="ellipsis")
        for number, line in enumerate(lines):
            out.append(Segment(first) if number == 0 else indent)
            out.extend(line.render(console))
            out.append(Segment.line())
    console.print(Segments(out))


def _aligned(text: str, fill: int, justify: Literal["left", "right"]) -> str:
    return " " * fill + text if justify == "right" else text + " " * fill
