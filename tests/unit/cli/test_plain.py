"""Where output is not a terminal, `cli.plain` writes what Rich would write, byte for byte: lines
of markup, `ui.table`'s boxed tables and `consort log`'s table, over Consort's own kinds of text
and over many random ones (what it is not sure of, it leaves to Rich)."""

from __future__ import annotations

import io
import random
from collections.abc import Callable
from datetime import UTC, datetime

import pytest
from rich._emoji_codes import EMOJI
from rich.cells import cell_len as rich_cell_len
from rich.console import Console
from rich.errors import MarkupError
from rich.markup import escape as rich_escape

from consort.app.log import LogEntry
from consort.cli import log, plain, ui

Draw = Callable[[], None]

TOKENS = [
    "a", "Zeta", "F1-stock-visibility", "0", "100", " ", " ", " ", "  ", "[", "]", "[bold]",
    "[/bold]", "[/]", "[red]", "[/red]", "[b]", "[/bold red]", "[link=x]", "[@click]", "\\",
    "\\\\", "\\[", ":", ":smile:", ":100:", ":SMILE:", ":smile-text:", ":thumbs_up:", "10:30:40",
    "http://127.0.0.1:5432/db", "=", "é", "日本", "…", "😀", "\n", "\t", "\r", "\x1b", "x" * 30,
    '["a", "b"]', "key=value", "[x]", "[not a style]", "[#ff0000]", "[/x]", ";", "-", "_",
]  # fmt: skip


# Text with no tab, control code or line break, which are Rich's to print; cells of `ui.table`
# are markup, so their tokens have no closing tag, tag with parameters or handler either.
TEXT_TOKENS = [t for t in TOKENS if not any(c in t for c in "\n\t\r\x1b")]
CELL_TOKENS = [t for t in TEXT_TOKENS if not any(c in t for c in "/@=") and t not in ("[", "]")]


def _random_texts(count: int, seed: int, tokens: list[str] = TOKENS) -> list[str]:
    rng = random.Random(seed)  # noqa: S311 -- sample texts, not secrets
    return ["".join(rng.choices(tokens, k=rng.randint(0, 9))) for _ in range(count)]


def _unwrapped(file: io.StringIO) -> Console:
    """Consort's console where output is not a terminal (`ui.console`), on `file`."""
    return ui._unwrapped_unless_terminal(Console(file=file, highlight=False, force_terminal=False))


class Outputs:
    """What a drawing prints with `cli.plain` allowed, and with Rich alone."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
        self.monkeypatch = monkeypatch
        self.capsys = capsys
        self.rich_used = False

    def _run(self, draw: Draw, *, allow_plain: bool) -> tuple[str, str] | type[Exception]:
        out, err = io.StringIO(), io.StringIO()
        self.monkeypatch.setattr(ui, "plain_output", lambda stderr=False: allow_plain)
        self.monkeypatch.setattr(ui, "console", lambda: _unwrapped(out))
        self.monkeypatch.setattr(ui, "err_console", lambda: _unwrapped(err))
        self.capsys.readouterr()
        try:
            draw()
        except MarkupError:
            return MarkupError
        written = self.capsys.readouterr()
        if allow_plain:
            self.rich_used = bool(out.getvalue() or err.getvalue())
        return written.out + out.getvalue(), written.err + err.getvalue()

    def compare(self, draw: Draw) -> bool:
        """Assert both print the same; True when `cli.plain` printed it all."""
        by_rich = self._run(draw, allow_plain=False)
        with_plain = self._run(draw, allow_plain=True)
        assert with_plain == by_rich
        return not self.rich_used


@pytest.fixture
def outputs(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Outputs:
    return Outputs(monkeypatch, capsys)


CONSORT_LINES = [
    "[bold]done[/bold]  (done lane)",
    "why: every feature is done",
    "run: consort drive --feature F1-stock-visibility",
    "[bold]run the spec-author turn[/bold]  (design lane)",
    "no features yet: `consort intake feature --file request.md`",
    '  resolve: consort retry F1 --note "..."  |  consort amend F1/S1/T3 --note "..."',
    "spike try-jsonb running in /tmp/x/.consort/spikes/try-jsonb until 2026-12-02T10:30:40+00:00",
    "the ledger is empty",
]


@pytest.mark.parametrize("text", CONSORT_LINES)
def test_consort_s_lines_are_written_without_rich(outputs: Outputs, text: str) -> None:
    assert outputs.compare(lambda: ui.say(text))


def test_warnings_and_errors_are_written_without_rich(outputs: Outputs) -> None:
    assert outputs.compare(lambda: ui.warn("ledger line 7: [db] binaries = 'system' :smile:"))
    assert outputs.compare(lambda: ui.error("no consort.toml here", "run `consort init`"))
    assert outputs.compare(lambda: ui.stopped("interrupted (Ctrl-C)", ["run it again"]))
    assert outputs.compare(lambda: ui.step('set [db] binaries = "system" in consort.toml'))
    assert outputs.compare(lambda: ui.done("wrote [test.env]"))


def test_random_lines_print_as_rich_prints_them(outputs: Outputs) -> None:
    texts = _random_texts(600, seed=9)
    handled = sum(outputs.compare(lambda t=text: ui.say(t)) for text in texts)
    assert handled > len(texts) // 2  # most are plain's to write, not all left to Rich


def test_escape_is_rich_s_escape() -> None:
    for text in _random_texts(600, seed=14):
        assert plain.escape(text) == rich_escape(text)


def test_escaped_text_prints_as_itself_but_for_emoji_codes(outputs: Outputs) -> None:
    for text in _random_texts(300, seed=3):
        outputs.compare(lambda t=text: ui.warn(t))


def test_every_emoji_name_is_taken_for_one() -> None:
    assert all(plain._may_be_emoji(name) for name in EMOJI)
    assert {name for name in EMOJI if name.isdigit()} == plain.DIGIT_EMOJI
    assert not plain._may_be_emoji("30") and not plain._may_be_emoji("//127.0.0.1")


def test_what_plain_counts_as_one_cell_rich_does_too() -> None:
    for character in plain.ONE_CELL:
        assert rich_cell_len(character) == 1
        assert plain.cell_len(f"a{character}b{character}") == rich_cell_len(
            f"a{character}b{character}"
        )


STATUS_TABLES = [
    (
        "Features",
        [ui.Col("feature", whole=True), "title", "lane", "gates", "next", "artifacts"],
        [
            [
                "F1-stock-visibility",
                "Stock visibility",
                "done",
                "design approved; deploy approved; promote approved",
                "done",
                "feature-spec: accepted, architecture: accepted, db-design: accepted",
            ],
            ["F2-x", "X", "design", "design not reached", "run-turn", ""],
        ],
    ),
    (
        "Branches",
        ["", ui.Col("branch", whole=True), "database", ui.Col("parent", whole=True), "size"],
        [
            ["*", "main", "main", "-", "7.5 MB"],
            ["", "feature/F1-x", "consort_f1_3f2a", "main", "-"],
        ],
    ),
    ("Stories", ["feature", "story", "cycles"], []),
    ("A title wider than its table", ["a"], [["b"]]),
    ("[bold][/bold]", ["[b]styled[/b]"], [["[dim]-[/dim]"], ["\\[not a tag]"]]),
    ("Short rows", ["a", "b"], [["only a"]]),
    (None, ["x", "y"], [["日本語", "…"]]),
]


@pytest.mark.parametrize(("title", "columns", "rows"), STATUS_TABLES)
def test_status_tables_are_drawn_as_rich_draws_them(
    outputs: Outputs, title: str | None, columns: list[str | ui.Col], rows: list[list[str]]
) -> None:
    handled = outputs.compare(lambda: ui.table(title, columns, rows))
    assert handled == (title not in ("A title wider than its table", "Short rows"))


def test_random_tables_are_drawn_as_rich_draws_them(outputs: Outputs) -> None:
    rng = random.Random(5)  # noqa: S311
    handled = 0
    for _ in range(150):
        width = rng.randint(1, 4)
        texts = iter(_random_texts(width * 5 + 1, rng.randint(0, 10**6), CELL_TOKENS))
        headers = [next(texts) for _ in range(width)]
        rows = [[next(texts) for _ in range(width)] for _ in range(rng.randint(0, 4))]
        title = next(texts) or None
        handled += outputs.compare(lambda: ui.table(title, headers, rows))  # noqa: B023
    assert handled > 120


def _entry(seq: int, subject: str | None, kind: str, data: dict[str, object]) -> LogEntry:
    time = datetime(2026, 12, 1, 10, 30, 40, tzinfo=UTC)
    return LogEntry(seq, time, "orchestrator", kind, subject, data, {})


LEDGER = [
    _entry(1, "project", "project.initialized", {"consort": "0.1.0"}),
    _entry(2, "F1-stock-visibility", "turn.finished", {"role": "spec-author", "step": "spec"}),
    _entry(
        140,
        "F1-stock-visibility",
        "feature.promoted",
        {"commit": "4ec1a18" * 6, "deleted": ["story/F1-stock-visibility/S1-file-stock"] * 3},
    ),
    _entry(141, None, "drive.stopped", {}),
]


def test_the_log_is_drawn_as_rich_draws_it(outputs: Outputs) -> None:
    assert outputs.compare(lambda: log._print_table(LEDGER))


def test_random_logs_are_drawn_as_rich_draws_them(outputs: Outputs) -> None:
    rng = random.Random(11)  # noqa: S311
    handled = 0
    for _ in range(80):
        texts = iter(_random_texts(40, rng.randint(0, 10**6), TEXT_TOKENS))
        entries = [
            _entry(rng.randint(1, 20_000), next(texts) or None, "turn.finished", {"n": next(texts)})
            for _ in range(rng.randint(1, 5))
        ]
        handled += outputs.compare(lambda: log._print_table(entries))  # noqa: B023
    assert handled > 70


def test_a_pipe_is_plain_unless_rich_s_switches_say_terminal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class Pipe(io.StringIO):
        def isatty(self) -> bool:
            return False

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    for switch in plain.TERMINAL_SWITCHES:
        monkeypatch.delenv(switch, raising=False)
    assert plain.is_plain(Pipe()) and not plain.is_plain(Terminal())
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert not plain.is_plain(Pipe())


# What a terminal acts on instead of showing: an artifact's `\r\x1b[2K` erased the line a gate
# question was printing, and printed a line of the artifact's choosing in its place.
ACTED_ON = ["\r", "\x1b", "\x07", "\x08", "\x0b", "\x7f", "\x9b", "\u202e", "\u2066", "\u2028"]


@pytest.mark.parametrize("character", ACTED_ON)
def test_what_a_terminal_acts_on_is_shown_as_its_escape(outputs: Outputs, character: str) -> None:
    code = ord(character)
    shown = f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
    assert plain.visible(f"it is 41{character}42") == f"it is 41{shown}42"
    _, err = outputs._run(lambda: ui.warn(f"then it is 41{character}42"), allow_plain=False)
    assert character not in err
    cells = ["x", f"41{character}42"]
    for allow_plain in (False, True):
        out, _ = outputs._run(lambda: ui.table(None, ["a", "b"], [cells]), allow_plain=allow_plain)
        assert character not in out


def test_newlines_tabs_and_other_text_stay_as_they_are() -> None:
    text = "line one\n\tline two: é 日本 😀 [bold] \\ …"
    assert plain.visible(text) == text
