"""Shell words and operators: a small, quote-aware reading of bash syntax for the guard.

`shlex` alone loses what the guard needs: it swallows the newline after a comment (joining two
commands into one), and it cannot tell a here-document body from commands. This lexer keeps:

- words with their quotes removed, and the bodies of the command substitutions (`$(...)`,
  backticks) found in them, so that those can be read as commands too;
- operators (`;`, `&&`, `|`, `>`, `>>`, `2>&1` as `2` `>&` `1`, `<(`, ...) and newlines;
- here-document bodies, attached to the word after `<<` (the delimiter).

It does not expand anything: variables, `~` and globs are the reader's job (see `shell`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

# Longest first: the lexer takes the longest operator that starts at the current character.
OPERATORS = (
    "&>>",
    "<<-",
    "<<<",
    "&&",
    "||",
    ";;",
    ";&",
    "|&",
    ">>",
    ">|",
    ">&",
    "&>",
    "<>",
    "<&",
    "<<",
    "<(",
    ">(",
    ";",
    "|",
    "&",
    "(",
    ")",
    "<",
    ">",
)
GLOB_CHARS = frozenset("*?[")


class ShellSyntaxError(ValueError):
    """The command line cannot be read (an unclosed quote or substitution)."""


@dataclass(frozen=True)
class Word:
    text: str  # quotes removed, nothing expanded
    substitutions: tuple[str, ...] = ()  # bodies of $(...) and `...` inside the word
    glob: bool = False  # has an unquoted * ? or [
    heredoc: str | None = None  # for the delimiter word of `<<`: the document's body


@dataclass(frozen=True)
class Op:
    text: str


Token = Word | Op


def tokenize(text: str) -> list[Token]:
    return _Lexer(text).run()


class _Lexer:
    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0
        self.tokens: list[Token] = []
        self.chars: list[str] | None = None  # the word being read; None between words
        self.subs: list[str] = []
        self.glob = False
        self.expect_delimiter: bool | None = None  # after << (True: <<- strips tabs)
        self.pending: list[tuple[int, str, bool]] = []  # (token index, delimiter, strip tabs)

    def run(self) -> list[Token]:  # noqa: PLR0912 -- one branch per kind of character
        text = self.text
        while self.i < len(text):
            char = text[self.i]
            if char == "\\":
                self._backslash()
            elif char in " \t\r":
                self._flush()
                self.i += 1
            elif char == "\n":
                self._flush()
                self.tokens.append(Op("\n"))
                self.i += 1
                self._read_heredocs()
            elif char == "#" and self.chars is None:
                end = text.find("\n", self.i)
                self.i = len(text) if end < 0 else end  # the newline itself still separates
            elif char == "'":
                end = text.find("'", self.i + 1)
                if end < 0:
                    raise ShellSyntaxError("unclosed single quote")
                self._word().append(text[self.i + 1 : end])
                self.i = end + 1
            elif char == '"':
                self._double_quoted()
            elif char == "$" and text.startswith("$(", self.i):
                body, self.i = read_balanced(text, self.i + 2)
                self.subs.append(body)
                self._word().append(f"$({body})")
            elif char == "$" and text.startswith("${", self.i):
                end = text.find("}", self.i)
                if end < 0:
                    raise ShellSyntaxError("unclosed ${")
                self._word().append(text[self.i : end + 1])
                self.i = end + 1
            elif char == "`":
                body, self.i = _read_backticks(text, self.i + 1)
                self.subs.append(body)
                self._word().append(f"$({body})")
            elif (op := _operator_at(text, self.i)) is not None:
                self._flush()
                self.tokens.append(Op(op))
                self.i += len(op)
                if op in ("<<", "<<-"):
                    self.expect_delimiter = op == "<<-"
            else:
                self._word().append(char)
                self.glob = self.glob or char in GLOB_CHARS
                self.i += 1
        self._flush()
        for index, _delimiter, _strip in self.pending:  # no newline after the last line
            self._attach(index, "")
        return self.tokens

    def _word(self) -> list[str]:
        if self.chars is None:
            self.chars = []
        return self.chars

    def _flush(self) -> None:
        if self.chars is None:
            return
        word = Word("".join(self.chars), tuple(self.subs), self.glob)
        self.tokens.append(word)
        if self.expect_delimiter is not None:
            self.pending.append((len(self.tokens) - 1, word.text, self.expect_delimiter))
            self.expect_delimiter = None
        self.chars, self.subs, self.glob = None, [], False

    def _backslash(self) -> None:
        nxt = self.text[self.i + 1 : self.i + 2]
        if nxt == "\n":  # a line continuation: both characters vanish
            self.i += 2
            return
        self._word().append(nxt)
        self.i += 2

    def _double_quoted(self) -> None:
        text = self.text
        j = self.i + 1
        out = self._word()
        while True:
            if j >= len(text):
                raise ShellSyntaxError("unclosed double quote")
            char = text[j]
            if char == "\\" and j + 1 < len(text) and text[j + 1] in '$`"\\\n':
                if text[j + 1] != "\n":
                    out.append(text[j + 1])
                j += 2
            elif char == '"':
                self.i = j + 1
                return
            elif text.startswith("$(", j):
                body, j = read_balanced(text, j + 2)
                self.subs.append(body)
                out.append(f"$({body})")
            elif char == "`":
                body, j = _read_backticks(text, j + 1)
                self.subs.append(body)
                out.append(f"$({body})")
            else:
                out.append(char)
                j += 1

    def _read_heredocs(self) -> None:
        """After a newline: the bodies of the here-documents opened on the line just ended."""
        text = self.text
        for index, delimiter, strip_tabs in self.pending:
            lines: list[str] = []
            while self.i < len(text):
                end = text.find("\n", self.i)
                line = text[self.i :] if end < 0 else text[self.i : end]
                self.i = len(text) if end < 0 else end + 1
                if (line.lstrip("\t") if strip_tabs else line) == delimiter:
                    break
                lines.append(line)
            self._attach(index, "".join(f"{line}\n" for line in lines))
        self.pending = []

    def _attach(self, index: int, body: str) -> None:
        token = self.tokens[index]
        if isinstance(token, Word):
            self.tokens[index] = replace(token, heredoc=body)


def _operator_at(text: str, i: int) -> str | None:
    for op in OPERATORS:
        if text.startswith(op, i):
            return op
    return None


def read_balanced(text: str, start: int) -> tuple[str, int]:
    """The body of a `$(` whose body starts at `start`, and the index after its `)`."""
    depth = 1
    j = start
    while j < len(text):
        char = text[j]
        if char == "\\":
            j += 2
            continue
        if char == "'":
            end = text.find("'", j + 1)
            if end < 0:
                raise ShellSyntaxError("unclosed single quote")
            j = end + 1
            continue
        if char == '"':
            j = _skip_double_quoted(text, j + 1)
            continue
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                return text[start:j], j + 1
        j += 1
    raise ShellSyntaxError("unclosed $(")


def _skip_double_quoted(text: str, j: int) -> int:
    while j < len(text):
        if text[j] == "\\":
            j += 2
        elif text[j] == '"':
            return j + 1
        else:
            j += 1
    raise ShellSyntaxError("unclosed double quote")


def _read_backticks(text: str, start: int) -> tuple[str, int]:
    j = start
    while j < len(text):
        if text[j] == "\\":
            j += 2
        elif text[j] == "`":
            return text[start:j], j + 1
        else:
            j += 1
    raise ShellSyntaxError("unclosed backquote")
