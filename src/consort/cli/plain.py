"""What Rich prints where output is not a terminal, made without importing Rich.

Outside a terminal Rich styles nothing and, as Consort sets it up (`ui.UNWRAPPED_WIDTH`), wraps
nothing: a line of console markup comes out as the markup's text, and a table as its cells laid
out at their widest. Importing Rich's console and table costs more than the rest of `consort
status` together, so `status`, `next` and `log` print through here when they write to a pipe, a
file or a CI log. Each function returns None for input whose rendering it is not sure of (a tag
with parameters, a tab or control code, a cell of several lines, a title wider than its table):
the caller prints that through Rich. `tests/unit/cli/test_plain.py` compares the two, byte for
byte, over many inputs.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import IO, Literal, NamedTuple

# Rich's own patterns (rich.markup, rich._emoji_replace).
TAG = re.compile(r"((\\*)\[([a-z#/@][^[]*?)])")
ESCAPABLE = re.compile(r"(\\*)(\[[a-z#/@][^[]*?])")
EMOJI_CODE = re.compile(r"(:(\S*?)(?:(?:\-)(emoji|text))?:)")
# Every name in Rich's emoji table is made of these ASCII characters and others beyond ASCII; of
# the names of digits only, these two are in it (`tests/unit/cli/test_plain.py` checks both).
EMOJI_ASCII = frozenset("0123456789abcdefghijklmnopqrstuvwxyz!#&()*+-._")
DIGIT_EMOJI = frozenset({"100", "1234"})
# Rich strips these from text (rich.control.STRIP_CONTROL_CODES) and expands tabs; the other
# control codes it passes on, measuring them as it measures them. All are left to Rich.
UNSURE_CHARACTERS = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]")
# What a terminal acts on instead of showing: the C0 and C1 controls but newline and tab (ESC
# starts a sequence that moves the cursor, erases a line or hides text; a carriage return goes
# back to the line's start), DEL, and the Unicode controls that reorder text or break lines
# (bidirectional marks, embeddings, overrides and isolates; the line and paragraph separators).
UNSHOWN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")
# What Consort writes beyond ASCII ("…" ends a cut log summary), each one cell wide as Rich
# counts it: measured without loading Rich's tables of Unicode widths.
ONE_CELL = frozenset("…✓")
# Rich's environment switches of `Console.is_terminal`: where one is set, Rich decides.
TERMINAL_SWITCHES = ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "JUPYTER_COLUMNS")


class Plain(NamedTuple):
    text: str
    styled: bool  # the markup had a style tag (which gives Rich's text a span)


def is_plain(stream: IO[str]) -> bool:
    """Whether Rich would see `stream` as no terminal (and no switch says otherwise)."""
    if any(name in os.environ for name in TERMINAL_SWITCHES):
        return False
    isatty = getattr(stream, "isatty", None)
    try:
        return isatty is not None and not isatty()
    except ValueError:  # a closed stream: Rich says "no terminal" too
        return True


def draws_boxes(stream: IO[str]) -> bool:
    """Rich draws a table's box in ASCII where the stream's encoding is not a UTF one."""
    encoding = getattr(stream, "encoding", None) or "utf-8"
    return encoding.lower().startswith("utf")


def visible(text: str) -> str:
    """`text` with every character a terminal would act on (`UNSHOWN`) written out as its
    escape, `\\x1b` or `\\u202e`. Artifacts, agents' reports and database names reach the
    terminal: an `\\r\\x1b[2K` in an acceptance criterion would erase the criterion as the
    design gate asks about it, and print one the person expects in its place."""
    return UNSHOWN.sub(_escaped, text)


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape(text: str) -> str:
    """`rich.markup.escape`: `text` as markup that prints as itself."""

    def doubled(match: re.Match[str]) -> str:
        backslashes, tag = match.groups()
        return f"{backslashes}{backslashes}\\{tag}"

    escaped = ESCAPABLE.sub(doubled, text)
    if escaped.endswith("\\") and not escaped.endswith("\\\\"):
        return escaped + "\\"
    return escaped


def text_of(markup: str) -> Plain | None:
    """The text Rich prints for `markup` (tags gone, escapes undone, emoji codes replaced)."""
    if UNSURE_CHARACTERS.search(markup):
        return None
    if "[" not in markup:
        return Plain(_emoji(markup), styled=False)
    parts: list[str] = []
    open_tags: list[str] = []
    styled = False
    position = 0
    for match in TAG.finditer(markup):
        full, escapes, tag = match.groups()
        start, end = match.span()
        if start > position:
            parts.append(_segment(markup[position:start]))
        position = end
        if escapes:
            backslashes, escaped = divmod(len(escapes), 2)
            parts.append("\\" * backslashes)
            if escaped:
                parts.append(_segment(full[len(escapes) :]))
                continue
        if "=" in tag or tag.startswith(("@", "/@")):
            return None  # parameters, or a handler: Rich checks them
        if tag.startswith("/"):
            name = tag[1:].strip()
            if not open_tags or (name and name != open_tags[-1]):
                return None  # Rich matches names by their parsed style, or refuses the tag
            open_tags.pop()
        else:
            open_tags.append(tag)
            styled = True
    if position < len(markup):
        parts.append(_segment(markup[position:]))
    return Plain("".join(parts), styled)


def _segment(text: str) -> str:
    """Text between tags, as Rich appends it."""
    return _emoji(text.replace("\\[", "["))


def _emoji(text: str) -> str:
    if ":" not in text or not any(
        _may_be_emoji(match.group(2)) for match in EMOJI_CODE.finditer(text)
    ):
        return text  # a time of day ("10:30:40") or a URL, never an emoji code
    from rich._emoji_replace import _emoji_replace

    return _emoji_replace(text)


def _may_be_emoji(name: str) -> bool:
    lowered = name.lower()
    if lowered.isdigit():
        return lowered in DIGIT_EMOJI
    return not lowered.isascii() or (lowered != "" and set(lowered) <= EMOJI_ASCII)


def cell_len(text: str) -> int:
    """How many terminal cells `text` takes, as Rich counts them."""
    if text.isascii() or all(c.isascii() or c in ONE_CELL for c in text):
        return len(text)
    from rich.cells import cell_len as rich_cell_len

    return rich_cell_len(text)


def line(markup: str) -> str | None:
    """`Console.print(markup)`: its text and a newline."""
    plain = text_of(markup)
    return None if plain is None else plain.text + "\n"


def _texts(cells: Sequence[str]) -> list[Plain] | None:
    """Each cell's text, or None when one is not sure or has several lines (Rich's layout)."""
    texts = []
    for cell in cells:
        text = text_of(cell)
        if text is None or "\n" in text.text:
            return None
        texts.append(text)
    return texts


def boxed_table(
    title: str | None, headers: Sequence[str], rows: Sequence[Sequence[str]], max_width: int
) -> str | None:
    """`ui.table`: Rich's default `Table` (heavy head, cells padded by one) under a title."""
    if any(len(row) != len(headers) for row in rows):
        return None
    head = _texts(headers)
    body = [_texts(row) for row in rows]
    name = text_of(title) if title else None
    if head is None or any(row is None for row in body) or (title and name is None):
        return None
    cells = [[cell.text for cell in row] for row in body if row is not None]
    widths = [
        max(cell_len(text) for text in (head[index].text, *(row[index] for row in cells))) + 2
        for index in range(len(headers))
    ]
    width = sum(widths) + len(widths) + 1
    if width > max_width:
        return None
    lines = []
    if name is not None:
        if "\n" in name.text or cell_len(name.text) > width:
            return None
        lines.append(name.text)
    lines.append("┏" + "┳".join("━" * w for w in widths) + "┓")
    lines.append(_boxed_row("┃", [c.text for c in head], widths))
    lines.append("┡" + "╇".join("━" * w for w in widths) + "┩")
    lines.extend(_boxed_row("│", row, widths) for row in cells)
    lines.append("└" + "┴".join("─" * w for w in widths) + "┘")
    return "".join(f"{text}\n" for text in lines)


def _boxed_row(edge: str, texts: Sequence[str], widths: Sequence[int]) -> str:
    return (
        edge
        + edge.join(f" {_pad(t, w - 2, 'left')} " for t, w in zip(texts, widths, strict=True))
        + edge
    )


def borderless_table(
    columns: Sequence[tuple[str, Literal["left", "right"]]],
    rows: Sequence[Sequence[str]],
    *,
    gap: int,
    max_width: int,
) -> str | None:
    """`cli.table.print_table` at an unbounded width: every column at its widest cell, `gap`
    spaces after each but the last, and the last one's cells padded to its width."""
    if any(len(row) != len(columns) for row in rows):
        return None
    head = _texts([header for header, _ in columns])
    body = [_texts(row) for row in rows]
    if head is None or any(row is None for row in body):
        return None
    texts = [row for row in body if row is not None]
    last = len(columns) - 1
    if any(cell.styled for row in (head, *texts) for cell in row[:last]):
        return None  # styled one-line cells: `print_table` leaves those to Rich's layout
    widths = [
        max(cell_len(cell.text) for cell in (head[index], *(row[index] for row in texts)))
        for index in range(len(columns))
    ]
    widths[last] = widths[last] or 1
    if sum(widths) + gap * last > max_width:
        return None
    spacer = " " * gap
    out = []
    for row in (head, *texts):
        shown = [
            _pad(cell.text, width, justify)
            for cell, width, (_, justify) in zip(row, widths, columns, strict=True)
        ]
        out.append(spacer.join(shown) + "\n")
    return "".join(out)


def _pad(text: str, width: int, justify: Literal["left", "right"]) -> str:
    fill = " " * (width - cell_len(text))
    return fill + text if justify == "right" else text + fill
