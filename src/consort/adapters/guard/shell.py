"""Which paths a shell command line would write, move, delete or edit in place.

A cautious, best-effort reading — the post-turn `git diff` stays the ground truth. Commands are
split on `;`, `&&`, `||`, `|`, `&`, newlines and subshells; `cd` is followed; variables assigned
on the line (`D=tests; rm -r $D`, `for f in tests/*; do ... "$f"`), `~` and globs are expanded;
`bash -c`, `sh -c`, `eval`, `env`, `sudo`, `timeout`, `nice`, `xargs` and the like are looked
through; command substitutions, process substitutions and here-documents fed to a shell or an
interpreter are read too.

Caught (each a `WriteTarget`):

- redirections `>`, `>>`, `>|`, `&>`, `&>>`, `<>`, `>& file` (and `exec 3>file`);
- `rm`, `rmdir`, `unlink`, `shred` (recursive), `truncate`, `touch`, `tee`, `sponge`, `dd of=`,
  `chmod`/`chown`/`chgrp` (recursive with -R), `ed`/`ex`;
- `mv` (sources and destination), `cp`, `ln`, `install`, `rsync` (destination);
- `sed -i`, `perl -i`, `ruby -i`, `gawk -i inplace`;
- `curl -o`, `wget -O` / `-P`;
- `git checkout`/`restore` of paths; `git rm`, `git mv`, `git clean`, `git apply`; and commands
  that rewrite the whole tree: `git checkout <branch>`, `git switch`, `git reset --hard`,
  `git stash`, `git merge`, `git rebase`, `git pull`, `git cherry-pick`, `git revert`, `git am`;
- `patch` (the files named in the patch, when it can be read);
- `find ... -delete` / `-exec <writer>` (the start folders, narrowed by a single `-name`);
- `xargs <writer>` (the paths the producer before the pipe names, else the current folder);
- inline programs (`python -c`, `python - <<EOF`, `node -e`, `perl -e`, `ruby -e`) that call a
  file-writing API: every string literal in them that names a path (see `inline`).

Also told (`CommandReading.terminal_readers`): the programs on the line that would read their
commands from the terminal — a bare `bash` or `sh`, `python` or `node` with no script and no
`-c`/`-e`, `-i`, a REPL such as `ipython` or `psql`, an editor. What is typed into them later
(Codex's `write_stdin`) reaches no hook, so the guard refuses them where that is possible.

Not caught: programs run from files (`python script.py`, `make`, `npm run`), variables whose value
is not assigned on the same command line (`while read f`), paths computed at run time, a symbolic
link made and written through in one command line, `tar -x`/`unzip`, `sed`'s `w` command, `awk`
redirections. Those changes are still found and reverted after the turn.

A command that acts on a whole folder is refused when the folder holds a protected file; that
includes `rm -rf .`, `git stash` and `git checkout <branch>` anywhere in the tree, since the tree
holds protected files (its tests, `.consort/`).
"""

from __future__ import annotations

import contextlib
import glob as globbing
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from consort.adapters.guard.inline import code_targets, patch_paths
from consort.adapters.guard.lexer import Op, Token, Word, tokenize

SEPARATORS = frozenset({";", "&", "&&", "||", "|", "|&", ";;", ";&", "\n"})
PIPES = frozenset({"|", "|&"})
WRITE_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>", "<>"})
REDIRECTS = WRITE_REDIRECTS | {">&", "<", "<&", "<<", "<<-", "<<<"}
_ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.DOTALL)
_VARIABLE = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")
MAX_DEPTH = 8  # nested bash -c / eval / substitutions read before giving up on a command


@dataclass(frozen=True)
class WriteTarget:
    """A path a command would change; relative paths are relative to `cwd`."""

    path: str
    cwd: Path
    command: str  # the command, for the message
    verb: str  # "write", "delete", "move", "edit in place", ...
    recursive: bool = False  # everything below `path` is affected too
    name_filter: str | None = None  # only files whose name matches (find -name)


@dataclass
class _Context:
    cwd: Path
    tree: Path
    variables: dict[str, str]
    depth: int = 0
    loops: dict[str, list[str]] = field(default_factory=dict)  # for NAME in VALUES
    terminal_readers: list[str] = field(default_factory=list)  # shared with every child

    def child(self) -> _Context:
        return _Context(
            self.cwd,
            self.tree,
            dict(self.variables),
            self.depth + 1,
            dict(self.loops),
            self.terminal_readers,
        )


@dataclass
class _Simple:
    """One simple command: its words and its redirections."""

    words: list[Word] = field(default_factory=list)
    redirects: list[tuple[str, Word]] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not self.words and not self.redirects


@dataclass(frozen=True)
class _Invocation:
    args: tuple[str, ...]  # expanded words
    stdin_text: str | None  # a here-document or here-string
    stdin_path: str | None  # `< file`
    producer: tuple[str, ...] | None  # the expanded words of the command piped into this one
    label: str  # the command as written, shortened, for messages

    @property
    def has_stdin(self) -> bool:
        """Whether its standard input is given on the line (not left to the terminal)."""
        return (
            self.stdin_text is not None or self.stdin_path is not None or self.producer is not None
        )


@dataclass(frozen=True)
class CommandReading:
    targets: list[WriteTarget]
    terminal_readers: list[str]  # the commands that would read commands from the terminal


def read_command(
    command: str, cwd: Path, tree: Path, env: Mapping[str, str] | None = None
) -> CommandReading:
    """What `command`, run in `cwd`, would change, and which of its programs would wait for
    commands typed on the terminal. Raises `ShellSyntaxError` when the line cannot be read."""
    variables = {"HOME": (env or os.environ).get("HOME", str(Path.home())), "PWD": str(cwd)}
    context = _Context(cwd, tree, variables)
    targets = _script(tokenize(command), context)
    return CommandReading(targets, list(dict.fromkeys(context.terminal_readers)))


def write_targets(
    command: str, cwd: Path, tree: Path, env: Mapping[str, str] | None = None
) -> list[WriteTarget]:
    """Every path `command`, run in `cwd`, would change (as far as can be told without running
    it). Raises `ShellSyntaxError` when the line cannot be read."""
    return read_command(command, cwd, tree, env).targets


def _script(tokens: Sequence[Token], context: _Context) -> list[WriteTarget]:
    """Run through a token list in order (so that `cd` and assignments take effect)."""
    found: list[WriteTarget] = []
    current = _Simple()
    producer: tuple[str, ...] | None = None
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if isinstance(token, Op) and token.text in SEPARATORS:
            words = _finish(current, context, producer, found)
            producer = words if token.text in PIPES else None
            current = _Simple()
            i += 1
        elif isinstance(token, Op) and token.text in ("(", "<(", ">("):
            inner, i = _group(tokens, i + 1)
            # A subshell's `cd` and assignments end with it.
            found += _script(inner, context.child()) if context.depth < MAX_DEPTH else []
            if token.text != "(":
                current.words.append(Word("/dev/fd/63"))  # what bash passes for <(...)
        elif isinstance(token, Op) and token.text == ")":
            i += 1  # unbalanced: ignore
        elif isinstance(token, Op) and token.text in REDIRECTS:
            target = tokens[i + 1] if i + 1 < len(tokens) else None
            if isinstance(target, Word):
                current.redirects.append((token.text, target))
                i += 2
            else:
                i += 1
        elif isinstance(token, Word):
            current.words.append(token)
            i += 1
        else:
            i += 1
    _finish(current, context, producer, found)
    return found


def _group(tokens: Sequence[Token], start: int) -> tuple[list[Token], int]:
    """The tokens up to the `)` closing a group opened just before `start`; index after it."""
    depth = 1
    i = start
    while i < len(tokens):
        token = tokens[i]
        if isinstance(token, Op) and token.text in ("(", "<(", ">("):
            depth += 1
        elif isinstance(token, Op) and token.text == ")":
            depth -= 1
            if depth == 0:
                return list(tokens[start:i]), i + 1
        i += 1
    return list(tokens[start:]), len(tokens)


def _finish(
    simple: _Simple,
    context: _Context,
    producer: tuple[str, ...] | None,
    found: list[WriteTarget],
) -> tuple[str, ...]:
    """Analyse one simple command; return its expanded words (for a command piped after it)."""
    if simple.empty:
        return ()
    words = list(simple.words)
    # Reserved words that only group or branch: the command proper follows them.
    while words and words[0].text in {"{", "}", "!", "then", "do", "else", "if", "while", "until"}:
        words.pop(0)
    while words and (match := _ASSIGNMENT.match(words[0].text)) is not None:
        context.variables[match.group(1)] = _expand_text(match.group(2), context)
        words.pop(0)
    if len(words) >= 3 and words[0].text in ("for", "select") and words[2].text == "in":
        # for f in tests/*.py; do sed -i ... "$f"; done: $f stands for each value.
        values = [value for word in words[3:] for value in _expand_word(word, context)]
        context.loops[words[1].text] = values
        return ()
    label = " ".join(
        [w.text for w in simple.words] + [f"{op} {target.text}" for op, target in simple.redirects]
    )[:200]
    for word in [*simple.words, *(target for _, target in simple.redirects)]:
        for body in word.substitutions:
            if context.depth < MAX_DEPTH:
                found += _script(tokenize(body), context.child())
    stdin_text, stdin_path = _redirections(simple, context, label, found)
    args = tuple(arg for word in words for arg in _expand_word(word, context))
    if args:
        call = _Invocation(args, stdin_text, stdin_path, producer, label)
        found += _command(call, context)
    return args


def _redirections(
    simple: _Simple, context: _Context, label: str, found: list[WriteTarget]
) -> tuple[str | None, str | None]:
    """Add the files the redirections write to `found`; return (stdin text, stdin path)."""
    stdin_text: str | None = None
    stdin_path: str | None = None
    for op, target in simple.redirects:
        if op in ("<<", "<<-"):
            stdin_text = target.heredoc or ""
        elif op == "<<<":
            stdin_text = _expand_text(target.text, context) + "\n"
        elif op == "<":
            stdin_path = _expand_text(target.text, context)
        elif op in WRITE_REDIRECTS or (op == ">&" and not re.fullmatch(r"\d+-?|-", target.text)):
            for path in _expand_word(target, context):
                found.append(WriteTarget(path, context.cwd, label, f"write (redirection {op})"))
    return stdin_text, stdin_path


# ---- expansion --------------------------------------------------------------------------------


def _expand_text(text: str, context: _Context) -> str:
    """Variables assigned earlier on the line (and HOME, PWD) and a leading `~`; others stay."""

    def value(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        return context.variables.get(name, match.group(0))

    expanded = _VARIABLE.sub(value, text)
    if expanded == "~" or expanded.startswith("~/"):
        expanded = context.variables["HOME"] + expanded[1:]
    return expanded


def _expand_word(word: Word, context: _Context) -> list[str]:
    text = _expand_text(word.text, context)
    for match in _VARIABLE.finditer(text):
        values = context.loops.get(match.group(1) or match.group(2))
        if values is not None:
            expanded = [text.replace(match.group(0), value) for value in values]
            return [out for one in expanded for out in _glob(one, word.glob, context)]
    return _glob(text, word.glob, context)


def _glob(text: str, globbing_on: bool, context: _Context) -> list[str]:
    if not globbing_on:
        return [text]
    base = context.cwd
    pattern = text if os.path.isabs(text) else str(base / text)
    matches = sorted(globbing.glob(pattern))
    if not matches:
        return [text]  # bash passes an unmatched pattern on as it is
    return [m if os.path.isabs(text) else os.path.relpath(m, base) for m in matches]


# ---- commands ---------------------------------------------------------------------------------


Handler = Callable[[_Invocation, _Context], list[WriteTarget]]


def _command(call: _Invocation, context: _Context) -> list[WriteTarget]:
    name = os.path.basename(call.args[0])
    handler = _HANDLERS.get(name) or _interpreter_handler(name)
    return handler(call, context) if handler is not None else []


def _operands(args: Sequence[str], with_values: Iterable[str] = ()) -> list[str]:
    """The non-option words of a command's arguments (after `--`, every word is one)."""
    takes_value = set(with_values)
    found: list[str] = []
    i = 0
    options_over = False
    while i < len(args):
        arg = args[i]
        if options_over or arg == "-" or not arg.startswith("-"):
            found.append(arg)
        elif arg == "--":
            options_over = True
        elif arg in takes_value:
            i += 1  # the option's value is not an operand
        i += 1
    return found


def _has_flag(args: Sequence[str], short: str, long: Iterable[str] = ()) -> bool:
    longs = set(long)
    for arg in args:
        if arg == "--":
            return False
        if arg in longs or any(arg.startswith(f"{name}=") for name in longs):
            return True
        if arg.startswith("-") and not arg.startswith("--") and short in arg[1:]:
            return True
    return False


def _targets(
    paths: Iterable[str], call: _Invocation, context: _Context, verb: str, *, recursive: bool
) -> list[WriteTarget]:
    return [WriteTarget(p, context.cwd, call.label, verb, recursive) for p in paths]


def _delete(call: _Invocation, context: _Context) -> list[WriteTarget]:
    return _targets(_operands(call.args[1:]), call, context, "delete", recursive=True)


def _write(verb: str, with_values: Iterable[str] = ()) -> Handler:
    values = tuple(with_values)

    def handler(call: _Invocation, context: _Context) -> list[WriteTarget]:
        return _targets(_operands(call.args[1:], values), call, context, verb, recursive=False)

    return handler


def _change_mode(call: _Invocation, context: _Context) -> list[WriteTarget]:
    recursive = _has_flag(call.args[1:], "R", ("--recursive",))
    return _targets(
        _operands(call.args[1:]), call, context, "change the mode of", recursive=recursive
    )


def _copy_like(verb: str, *, always_recursive: bool = False, moves: bool = False) -> Handler:
    def handler(call: _Invocation, context: _Context) -> list[WriteTarget]:
        args = call.args[1:]
        recursive = always_recursive or _has_flag(args, "r", ("--recursive", "--archive"))
        recursive = recursive or _has_flag(args, "R") or _has_flag(args, "a")
        destination: str | None = None
        for i, arg in enumerate(args):
            if arg in ("-t", "--target-directory") and i + 1 < len(args):
                destination = args[i + 1]
            elif arg.startswith("--target-directory="):
                destination = arg.split("=", 1)[1]
        operands = _operands(args, ("-t", "--target-directory", "-S", "--suffix", "-m", "-o"))
        if destination is None:
            if len(operands) < 2:
                return []
            destination, sources = operands[-1], operands[:-1]
        else:
            sources = [o for o in operands if o != destination]
        found: list[WriteTarget] = []
        if moves:
            found += _targets(sources, call, context, "move away", recursive=True)
        into_folder = destination.endswith("/") or (context.cwd / destination).is_dir()
        if into_folder:
            placed = [os.path.join(destination, os.path.basename(s.rstrip("/"))) for s in sources]
            found += _targets(placed, call, context, verb, recursive=recursive or moves)
        else:
            found += _targets([destination], call, context, verb, recursive=recursive or moves)
        return found

    return handler


def _dd(call: _Invocation, context: _Context) -> list[WriteTarget]:
    paths = [arg[3:] for arg in call.args[1:] if arg.startswith("of=")]
    return _targets(paths, call, context, "write", recursive=False)


def _sed(call: _Invocation, context: _Context) -> list[WriteTarget]:
    if not _has_flag(call.args[1:], "i", ("--in-place",)):
        return []
    return _targets(_operands(call.args[1:]), call, context, "edit in place", recursive=False)


def _gawk(call: _Invocation, context: _Context) -> list[WriteTarget]:
    args = call.args[1:]
    inplace = any(
        a in ("-i", "--include") and i + 1 < len(args) and args[i + 1] == "inplace"
        for i, a in enumerate(args)
    )
    if not inplace and "-iinplace" not in args:
        return []
    return _targets(_operands(args), call, context, "edit in place", recursive=False)


def _download(output_options: Iterable[str], folder_options: Iterable[str] = ()) -> Handler:
    outputs, folders = tuple(output_options), tuple(folder_options)

    def handler(call: _Invocation, context: _Context) -> list[WriteTarget]:
        args = call.args[1:]
        found: list[WriteTarget] = []
        for i, arg in enumerate(args):
            for names, recursive in ((outputs, False), (folders, True)):
                for name in names:
                    if arg == name and i + 1 < len(args):
                        found += _targets(
                            [args[i + 1]], call, context, "write", recursive=recursive
                        )
                    elif name.startswith("--") and arg.startswith(f"{name}="):
                        value = arg.split("=", 1)[1]
                        found += _targets([value], call, context, "write", recursive=recursive)
        return found

    return handler


def _cd(call: _Invocation, context: _Context) -> list[WriteTarget]:
    operands = _operands(call.args[1:])
    target = operands[0] if operands else context.variables["HOME"]
    if target != "-":
        context.cwd = Path(os.path.normpath(context.cwd / target))
        context.variables["PWD"] = str(context.cwd)
    return []


def _declare(call: _Invocation, context: _Context) -> list[WriteTarget]:
    for arg in call.args[1:]:
        if (match := _ASSIGNMENT.match(arg)) is not None:
            context.variables[match.group(1)] = match.group(2)
    return []


def _unset(call: _Invocation, context: _Context) -> list[WriteTarget]:
    for name in call.args[1:]:
        context.variables.pop(name, None)
    return []


def _skip_then_run(option_values: Iterable[str], *, positional: int = 0) -> Handler:
    """A wrapper command (`sudo`, `nice`, `timeout 10`, ...): read the command it runs."""
    values = set(option_values)

    def handler(call: _Invocation, context: _Context) -> list[WriteTarget]:
        args = list(call.args[1:])
        i = 0
        while i < len(args) and args[i].startswith("-") and args[i] != "-":
            if args[i] == "--":
                i += 1
                break
            i += 2 if args[i] in values else 1
        i += positional
        return _rerun(call, args[i:], context)

    return handler


def _env(call: _Invocation, context: _Context) -> list[WriteTarget]:
    args = list(call.args[1:])
    inner = context
    while args:
        head = args[0]
        if head in ("-u", "--unset") and len(args) > 1:
            args = args[2:]
        elif head in ("-C", "--chdir") and len(args) > 1:
            inner = context.child()
            inner.depth = context.depth
            inner.cwd = Path(os.path.normpath(context.cwd / args[1]))
            args = args[2:]
        elif head in ("-S", "--split-string") and len(args) > 1:
            return _shell_text(" ".join(args[1:]), call, context)
        elif head.startswith("-") or _ASSIGNMENT.match(head):
            args = args[1:]
        else:
            break
    return _rerun(call, args, inner)


def _rerun(call: _Invocation, args: Sequence[str], context: _Context) -> list[WriteTarget]:
    if not args or context.depth >= MAX_DEPTH:
        return []
    inner = _Invocation(tuple(args), call.stdin_text, call.stdin_path, call.producer, call.label)
    return _command(inner, context)


def _shell_text(text: str, call: _Invocation, context: _Context) -> list[WriteTarget]:
    if context.depth >= MAX_DEPTH:
        return []
    inner = context.child()
    targets = _script(tokenize(text), inner)
    return targets


def _shell(call: _Invocation, context: _Context) -> list[WriteTarget]:
    """`bash -c '...'`, `sh -lc '...'`, `bash <<EOF ... EOF`; a script file is not read."""
    args = call.args[1:]
    for i, arg in enumerate(args):
        if arg.startswith("-") and not arg.startswith("--") and "c" in arg[1:]:
            return _shell_text(args[i + 1], call, context) if i + 1 < len(args) else []
        if arg.startswith("-") and not arg.startswith("--") and "i" in arg[1:]:
            context.terminal_readers.append(call.label)
        if not arg.startswith("-"):
            return []  # bash script.sh: not read
    if call.stdin_text is not None:
        return _shell_text(call.stdin_text, call, context)
    if not call.has_stdin:
        context.terminal_readers.append(call.label)  # bare `bash`: reads what is typed
    return []


def _eval(call: _Invocation, context: _Context) -> list[WriteTarget]:
    return _shell_text(" ".join(call.args[1:]), call, context)


def _trap(call: _Invocation, context: _Context) -> list[WriteTarget]:
    return _shell_text(call.args[1], call, context) if len(call.args) > 1 else []


def _xargs(call: _Invocation, context: _Context) -> list[WriteTarget]:
    args = list(call.args[1:])
    with_values = {"-I", "-d", "-n", "-P", "-L", "-s", "-E", "-a", "--delimiter", "--arg-file"}
    i = 0
    while i < len(args) and args[i].startswith("-"):
        i += 2 if args[i] in with_values else 1
    inner = args[i:] or ["echo"]
    # Whether the command would change files at all: try it on a stand-in path.
    probe = _Invocation((*inner, "xargs-input"), None, None, None, call.label)
    if not _command(probe, context.child()):
        return []
    writes = _command(_Invocation(tuple(inner), None, None, None, call.label), context.child())
    writer = os.path.basename(inner[0])
    paths, name_filter = _produced_paths(call.producer)
    verb = f"run `{writer}` on paths read from its input, under"
    return writes + [
        WriteTarget(p, context.cwd, call.label, verb, True, name_filter) for p in paths
    ]


def _produced_paths(producer: tuple[str, ...] | None) -> tuple[list[str], str | None]:
    """The paths the command before a pipe would print, as far as its arguments tell."""
    if not producer:
        return ["."], None
    name = os.path.basename(producer[0])
    if name == "find":
        starts, name_filter, _ = _find_parts(producer[1:])
        return starts, name_filter
    if name in ("echo", "printf", "ls", "grep", "egrep", "rg", "fd", "fdfind", "git"):
        operands = [o for o in _operands(producer[1:]) if o not in ("ls-files", "diff", "grep")]
        return operands or ["."], None
    return ["."], None  # cat list.txt | xargs rm: the paths are in a file


def _find_parts(args: Sequence[str]) -> tuple[list[str], str | None, list[str]]:
    """(start folders, the one -name pattern or None, the expression words) of find's args."""
    i = 0
    while i < len(args) and args[i] in ("-H", "-L", "-P"):
        i += 1
    starts: list[str] = []
    while i < len(args) and not args[i].startswith(("-", "(", "!")):
        starts.append(args[i])
        i += 1
    expression = list(args[i:])
    names = [
        expression[j + 1] for j, word in enumerate(expression[:-1]) if word in ("-name", "-iname")
    ]
    alternatives = any(word in ("-o", "-or", ",") for word in expression)
    name_filter = names[0] if len(names) == 1 and not alternatives else None
    return starts or ["."], name_filter, expression


def _find(call: _Invocation, context: _Context) -> list[WriteTarget]:
    starts, name_filter, expression = _find_parts(call.args[1:])
    destructive = "-delete" in expression
    for j, word in enumerate(expression):
        if word in ("-exec", "-execdir", "-ok", "-okdir"):
            end = next(
                (k for k in range(j + 1, len(expression)) if expression[k] in (";", "+")),
                len(expression),
            )
            inner = tuple(a if a != "{}" else "find-match" for a in expression[j + 1 : end])
            if inner and _command(
                _Invocation(inner, None, None, None, call.label), context.child()
            ):
                destructive = True
    if not destructive:
        return []
    return [
        WriteTarget(s, context.cwd, call.label, "delete or change files under", True, name_filter)
        for s in starts
    ]


def _patch(call: _Invocation, context: _Context) -> list[WriteTarget]:
    args = call.args[1:]
    operands = _operands(args, ("-p", "-i", "--input", "-d", "--directory", "-o", "--output"))
    if operands:
        return _targets(operands[:1], call, context, "patch", recursive=False)
    text = call.stdin_text
    source = _option_value(args, ("-i", "--input")) or call.stdin_path
    if text is None and source is not None:
        text = _read(context.cwd / source)
    return _patch_targets(text, call, context, strip=_strip_count(args))


def _strip_count(args: Sequence[str]) -> int | None:
    value = _option_value(args, ("-p", "--strip"))
    for arg in args:
        if arg.startswith("-p") and arg[2:].isdigit():
            value = arg[2:]
    return int(value) if value is not None and value.isdigit() else None


def _patch_targets(
    text: str | None, call: _Invocation, context: _Context, *, strip: int | None = None
) -> list[WriteTarget]:
    if text is None:
        return [WriteTarget(str(context.tree), context.cwd, call.label, "patch", True)]
    return _targets(patch_paths(text, strip=strip), call, context, "patch", recursive=False)


def _option_value(args: Sequence[str], names: Iterable[str]) -> str | None:
    options = tuple(names)
    for i, arg in enumerate(args):
        if arg in options and i + 1 < len(args):
            return args[i + 1]
        for name in options:
            if name.startswith("--") and arg.startswith(f"{name}="):
                return arg.split("=", 1)[1]
    return None


def _read(path: Path) -> str | None:
    with contextlib.suppress(OSError, UnicodeDecodeError):
        return path.read_text(encoding="utf-8")
    return None


# ---- git --------------------------------------------------------------------------------------

_TREE_REWRITING = frozenset(
    {"merge", "rebase", "pull", "cherry-pick", "revert", "am", "bisect", "read-tree"}
)


def _git(call: _Invocation, context: _Context) -> list[WriteTarget]:
    args = list(call.args[1:])
    cwd = context.cwd
    while args and args[0].startswith("-"):
        if args[0] in ("-C", "-c", "--git-dir", "--work-tree", "--namespace") and len(args) > 1:
            if args[0] == "-C":
                cwd = Path(os.path.normpath(cwd / args[1]))
            args = args[2:]
        else:
            args = args[1:]
    if not args:
        return []
    sub, rest = args[0], args[1:]
    git = _Git(
        rest,
        call,
        _Context(cwd, context.tree, context.variables, context.depth),
        [WriteTarget(str(context.tree), cwd, call.label, f"rewrite (git {sub})", True)],
    )
    if sub in _TREE_REWRITING:
        return git.whole
    handler = _GIT_SUBCOMMANDS.get(sub)
    return handler(git) if handler is not None else []


@dataclass(frozen=True)
class _Git:
    rest: Sequence[str]  # the subcommand's arguments
    call: _Invocation
    context: _Context  # with git -C applied
    whole: list[WriteTarget]  # "every file of the tree may change"

    def paths(self, paths: Iterable[str], verb: str) -> list[WriteTarget]:
        return _targets(paths, self.call, self.context, verb, recursive=True)


def _git_restore(git: _Git) -> list[WriteTarget]:
    staged = _has_flag(git.rest, "S", ("--staged",))
    if staged and not _has_flag(git.rest, "W", ("--worktree",)):
        return []  # the index only
    return git.paths(_operands(git.rest, ("-s", "--source")), "restore")


def _git_rm(git: _Git) -> list[WriteTarget]:
    return [] if "--cached" in git.rest else git.paths(_operands(git.rest), "delete (git rm)")


def _git_mv(git: _Git) -> list[WriteTarget]:
    call = _Invocation(("mv", *git.rest), None, None, None, git.call.label)
    return _copy_like("move into", moves=True)(call, git.context)


def _git_clean(git: _Git) -> list[WriteTarget]:
    if _has_flag(git.rest, "n", ("--dry-run",)):
        return []
    paths = _operands(git.rest, ("-e", "--exclude")) or [str(git.context.cwd)]
    return git.paths(paths, "delete untracked files under")


def _git_reset(git: _Git) -> list[WriteTarget]:
    return git.whole if any(a in git.rest for a in ("--hard", "--merge", "--keep")) else []


def _git_stash(git: _Git) -> list[WriteTarget]:
    rest = git.rest
    action = rest[0] if rest and not rest[0].startswith("-") else "push"
    if action in ("list", "show", "drop", "clear", "create", "store"):
        return []
    if "--" in rest:
        return git.paths(rest[rest.index("--") + 1 :], "stash (revert)")
    return git.whole


def _git_switch(git: _Git) -> list[WriteTarget]:
    creates = any(a in git.rest for a in ("-c", "-C", "--create", "--force-create"))
    start_points = _operands(git.rest, ("-c", "-C", "--create", "--force-create"))
    return [] if creates and not start_points else git.whole


def _git_apply(git: _Git) -> list[WriteTarget]:
    rest = git.rest
    if "--cached" in rest and "--index" not in rest:
        return []
    files = _operands(rest, ("-p", "--exclude", "--include", "--directory"))
    if not files or files == ["-"]:
        return _patch_targets(git.call.stdin_text, git.call, git.context, strip=1)
    found: list[WriteTarget] = []
    for name in files:
        found += _patch_targets(_read(git.context.cwd / name), git.call, git.context, strip=1)
    return found


def _git_checkout(git: _Git) -> list[WriteTarget]:
    rest = git.rest
    if "--" in rest:
        return git.paths(rest[rest.index("--") + 1 :], "check out over")
    operands = _operands(rest, ("-b", "-B", "--orphan", "--conflict"))
    if not operands:
        return []  # git checkout -b new: a new branch at HEAD, no file changes
    existing = [o for o in operands if (git.context.cwd / o).exists()]
    if existing:
        return git.paths(existing, "check out over")
    return git.whole  # a branch or a commit: every file may change


_GIT_SUBCOMMANDS: dict[str, Callable[[_Git], list[WriteTarget]]] = {
    "checkout": _git_checkout,
    "restore": _git_restore,
    "rm": _git_rm,
    "mv": _git_mv,
    "clean": _git_clean,
    "reset": _git_reset,
    "stash": _git_stash,
    "switch": _git_switch,
    "apply": _git_apply,
}


# ---- interpreters ----------------------------------------------------------------------------

_EVAL_OPTIONS = {
    "python": ("-c",),
    "node": ("-e", "--eval", "-p", "--print"),
    "perl": ("-e", "-E"),
    "ruby": ("-e",),
}
_VALUE_OPTIONS = {
    "python": ("-W", "-X"),
    "node": ("-r", "--require", "--import", "--loader"),
    "perl": ("-I", "-M", "-m"),
    "ruby": ("-I", "-r"),
}


def _interpreter_handler(name: str) -> Handler | None:
    family = re.sub(r"[\d.]+$", "", name)  # python3.11 -> python
    if family in ("python", "pypy"):
        return _interpreter("python")
    if family in ("node", "nodejs", "deno", "bun"):
        return _interpreter("node")
    if family in ("perl", "ruby"):
        return _interpreter(family)
    return None


def _interpreter_args(family: str, args: Sequence[str]) -> tuple[str | None, list[str], bool]:
    """(inline code, operands, whether a program file or module runs instead) of the args."""
    code: str | None = None
    operands: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in _EVAL_OPTIONS[family] and i + 1 < len(args):
            code, i = args[i + 1], i + 2
            continue
        if arg.startswith(("--eval=", "--print=")):
            code = arg.split("=", 1)[1]
        elif family == "python" and arg.startswith("-c") and len(arg) > 2:
            code = arg[2:]
        elif family == "python" and arg == "-m":
            return code, operands, True
        elif family in ("perl", "ruby") and re.fullmatch(r"-[a-zA-Z0-9.]*[eE]", arg):
            # perl -pe CODE, -pie CODE: a cluster ending in e takes the code next.
            if i + 1 < len(args):
                code, i = args[i + 1], i + 2
                continue
        elif arg in _VALUE_OPTIONS[family]:
            i += 1
        elif arg == "-" or not arg.startswith("-"):
            operands.append(arg)
            if code is None and arg != "-" and family in ("python", "node"):
                return code, operands, True  # python script.py ...: the file is not read
        i += 1
    return code, operands, False


def _interpreter(family: str) -> Handler:
    def handler(call: _Invocation, context: _Context) -> list[WriteTarget]:
        args = call.args[1:]
        code, operands, runs_file = _interpreter_args(family, args)
        found: list[WriteTarget] = []
        reads_program = code is None and not runs_file and operands in ([], ["-"])
        if "-i" in args or (reads_program and not call.has_stdin):
            context.terminal_readers.append(call.label)  # a REPL
        if family in ("perl", "ruby") and _has_flag(args, "i"):
            found += _targets(operands, call, context, "edit in place", recursive=False)
        if code is None and not runs_file and call.stdin_text is not None:
            code = call.stdin_text  # python - <<EOF ... EOF
        for literal, recursive in code_targets(code or ""):
            if " " in literal.strip():
                # A shell command in a string: os.system("rm -rf x"), subprocess.run(...)
                if context.depth < MAX_DEPTH:
                    with contextlib.suppress(ValueError):
                        found += _shell_text(literal, call, context)
                continue
            verb = "write (from inline code)"
            found.append(WriteTarget(literal, context.cwd, call.label, verb, recursive))
        return found

    return handler


def _terminal_program(
    batch_options: Iterable[str] = (), *, script: bool = False, edits: bool = False
) -> Handler:
    """A REPL or an editor: it reads commands from the terminal unless one of `batch_options`,
    a script operand (`script`), or a here-document, a file or a pipe on its standard input gives
    them. An editor's file operands are files it may change."""
    batch = tuple(batch_options)

    def handler(call: _Invocation, context: _Context) -> list[WriteTarget]:
        args = call.args[1:]
        operands = _operands(args)
        given = call.has_stdin or (script and bool(operands))
        given = given or any(arg.startswith(batch) for arg in args if batch)
        if not given:
            context.terminal_readers.append(call.label)
        return _targets(operands, call, context, "edit", recursive=False) if edits else []

    return handler


_EDITORS = ("vi", "vim", "nvim", "view", "nano", "pico", "emacs", "micro", "joe", "mcedit")
# name: (options that give it its commands, whether an operand is a script it runs instead)
_REPLS: dict[str, tuple[tuple[str, ...], bool]] = {
    "ipython": (("-c", "-m"), True),
    "irb": ((), True),
    "pry": ((), True),
    "lua": (("-e",), True),
    "tclsh": ((), True),
    "expect": (("-c", "-f"), True),
    "psql": (("-c", "--command", "-f", "--file", "-l", "--list"), False),
    "mysql": (("-e", "--execute"), False),
    "gdb": (("-batch", "--batch", "-ex"), False),
}


_HANDLERS: dict[str, Handler] = {
    **{name: _terminal_program(edits=True) for name in _EDITORS},
    **{name: _terminal_program(opts, script=script) for name, (opts, script) in _REPLS.items()},
    "rm": _delete,
    "rmdir": _delete,
    "unlink": _delete,
    "shred": _delete,
    "truncate": _write("truncate", ("-s", "--size", "-r", "--reference")),
    "touch": _write("touch", ("-d", "-t", "-r", "--date", "--reference")),
    "tee": _write("write"),
    "sponge": _write("write"),
    "ed": _write("edit"),
    "ex": _write("edit"),
    "dd": _dd,
    "chmod": _change_mode,
    "chown": _change_mode,
    "chgrp": _change_mode,
    "mv": _copy_like("move into", moves=True),
    "cp": _copy_like("copy onto"),
    "ln": _copy_like("link over"),
    "install": _copy_like("install onto"),
    "rsync": _copy_like("sync onto", always_recursive=True),
    "sed": _sed,
    "gsed": _sed,
    "gawk": _gawk,
    "awk": _gawk,
    "curl": _download(("-o", "--output")),
    "wget": _download(("-O", "--output-document"), ("-P", "--directory-prefix")),
    "patch": _patch,
    "git": _git,
    "find": _find,
    "xargs": _xargs,
    "cd": _cd,
    "pushd": _cd,
    "export": _declare,
    "declare": _declare,
    "typeset": _declare,
    "local": _declare,
    "readonly": _declare,
    "unset": _unset,
    "bash": _shell,
    "sh": _shell,
    "zsh": _shell,
    "dash": _shell,
    "ksh": _shell,
    "eval": _eval,
    "trap": _trap,
    "env": _env,
    "sudo": _skip_then_run(("-u", "-g", "-C", "-h", "-p", "-U")),
    "doas": _skip_then_run(("-u", "-C")),
    "nice": _skip_then_run(("-n", "--adjustment")),
    "ionice": _skip_then_run(("-c", "-n", "-p", "-t")),
    "nohup": _skip_then_run(()),
    "time": _skip_then_run(("-f", "-o")),
    "command": _skip_then_run(()),
    "builtin": _skip_then_run(()),
    "exec": _skip_then_run(("-a",)),
    "stdbuf": _skip_then_run(("-i", "-o", "-e")),
    "timeout": _skip_then_run(("-s", "-k", "--signal", "--kill-after"), positional=1),
    "chronic": _skip_then_run(()),
}
