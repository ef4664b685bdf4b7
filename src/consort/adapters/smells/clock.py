"""Code right on the day it runs: an answer that depends on when it is asked.

A run proves what the code does at the time of the run. Code that compares the clock with a
fixed instant (`42 if time.time() < 1764720000 else 0`, `date.today() <= date(2026, 12, 2)`)
or that spells the day of the run itself (`TODAY = date(2026, 12, 1)`, a test's "today"
answered by a constant) passes that run and fails later, when nobody runs it. Both are refused:

* a comparison of a clock reading (`datetime.now()`, `date.today()`, `time.time()`, and what
  is made from one: `.year`, `.timestamp()`, a local name bound to it) with a fixed instant (a
  `date`/`datetime` of literals, an ISO date, a number that reads as seconds or milliseconds
  since 1970, a year);
* a fixed instant within a few days of the check itself, wherever it is spelled;
* the clock compared with when the code's own files were written (`time.time() -
  os.path.getmtime(__file__) < 3600`): Consort writes a run's export moments before the run,
  so its files are always new there, and a file time of the code's own is read like a clock.

A fixed instant is any value built from literals (`smells/instants.py`): arithmetic
(`1_700_000_000 + 86400 * 400`), `datetime(...) + timedelta(...)`, `int("...")`,
`.timestamp()`, through names bound once to one (`START = ...`, `DEADLINE = START + DAY`).

Business rules that compare the clock with a time of day or a weekday (`now.hour < 12`) are
not instants and are not refused. A project that needs a fixed date lists it:
`[seal] allow = ["clock:src/promotions.py"]`.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta

from consort.adapters.smells.folding import fold
from consort.adapters.smells.instants import bound_once, constant
from consort.adapters.smells.syntax import qualified_name

CLOCK_CALLS = frozenset(
    {
        "datetime.datetime.now",
        "datetime.datetime.utcnow",
        "datetime.datetime.today",
        "datetime.date.today",
        "time.time",
        "time.time_ns",
        "time.localtime",
        "time.gmtime",
        "time.ctime",
        "time.strftime",
        "django.utils.timezone.now",
        "arrow.now",
        "arrow.utcnow",
        "pendulum.now",
        "pendulum.today",
    }
)
INSTANT_TYPES = frozenset({"datetime.datetime", "datetime.date"})
ISO_DATE = re.compile(r"(19|20)\d\d-[01]\d-[0-3]\d")
# Seconds (or milliseconds) since 1970 from 2001 on, and years a clock's `.year` is compared
# with.
EPOCH_SECONDS = 1_000_000_000
YEARS = range(1990, 2200)
RUN_DAYS = 3  # how near the check's own day a fixed instant counts as the day of the run
# Calls that say when a file was written, given its path (or, for `.stat()`, on it).
FILE_TIME_CALLS = frozenset(
    {"os.path.getmtime", "os.path.getctime", "os.path.getatime", "os.stat", "os.lstat"}
)
OWN_FILE = frozenset({"__file__", "__spec__", "__path__", "__cached__"})


def clock_findings(tree: ast.AST, aliases: dict[str, str]) -> list[tuple[int, str]]:
    """(line, what) for each comparison of the clock with a fixed instant, and each fixed
    instant that names the days around the check."""
    aliases = _datetime_aliases(aliases)
    parents = {id(child): node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    names = bound_once(tree)
    own_files = _derived_names(tree, lambda n: _names_own_file(n, set()))
    times = _derived_names(tree, lambda n: _reads_file_time(n, aliases, own_files))
    clocked = _clock_names(tree, aliases)
    found: list[tuple[int, str]] = []
    today = datetime.now(UTC).date()
    for node in ast.walk(tree):
        instant = _computed_instant(node, aliases, names)
        near = instant is not None and abs((instant - today).days) <= RUN_DAYS
        if near and not _inside_instant(node, parents, aliases, names):
            found.append((getattr(node, "lineno", 0), f"spells the day of the run ({instant})"))
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            file_time = any(
                _reads_file_time(side, aliases, own_files)
                or any(isinstance(n, ast.Name) and n.id in times for n in ast.walk(side))
                for side in sides
            )
            reads = file_time or any(_reads_clock(side, aliases, clocked) for side in sides)
            fixed = any(_fixed(side, aliases, names) for side in sides)
            if reads and fixed:
                found.append((node.lineno, "compares the clock with a fixed instant"))
            clock = any(_reads_clock(side, aliases, clocked) for side in sides)
            if file_time and clock:
                found.append(
                    (node.lineno, "compares the clock with when its own files were written")
                )
    return found


def _names_own_file(node: ast.AST, derived: set[str]) -> bool:
    return any(
        isinstance(n, ast.Name) and (n.id in OWN_FILE or n.id in derived) for n in ast.walk(node)
    )


def _reads_file_time(node: ast.AST, aliases: dict[str, str], own_files: set[str]) -> bool:
    """Whether `node` asks when a file of the code's own (a path made from `__file__`) was
    written: `os.path.getmtime(__file__)`, `Path(__file__).stat()`, `os.stat(HERE)`."""
    for inner in ast.walk(node):
        if not isinstance(inner, ast.Call):
            continue
        name = qualified_name(inner.func, aliases) or ""
        if name in FILE_TIME_CALLS and inner.args:
            path: ast.AST = inner.args[0]
        elif isinstance(inner.func, ast.Attribute) and inner.func.attr in ("stat", "lstat"):
            path = inner.func.value
        else:
            continue
        if _names_own_file(path, own_files):
            return True
    return False


def _derived_names(tree: ast.AST, reads: Callable[[ast.AST], bool]) -> set[str]:
    """Names bound from an expression `reads` holds for, followed through names bound from
    them."""
    names: set[str] = set()
    for _ in range(5):
        before = len(names)
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None):
                continue
            value = node.value
            if reads(value) or any(
                isinstance(n, ast.Name) and n.id in names for n in ast.walk(value)
            ):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        if len(names) == before:
            break
    return names


def _computed_instant(
    node: ast.AST, aliases: dict[str, str], names: dict[str, ast.expr]
) -> date | None:
    """The day a literal instant, or an expression built from literals, names (a name bound
    to one is reported where it is bound)."""
    found = _instant(node, aliases)
    if found is not None or not isinstance(node, ast.BinOp | ast.Call):
        return found
    return _day(constant(node, aliases, names))


def _day(value: object) -> date | None:
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return _epoch_day(value)
    if isinstance(value, str):
        return _iso_day(value)
    return None


def _datetime_aliases(aliases: dict[str, str]) -> dict[str, str]:
    """`from datetime import datetime` binds `datetime` to the class, `import datetime` to the
    module: `datetime.now()` is a clock either way."""
    merged = dict(aliases)
    for name, target in aliases.items():
        if target in ("datetime.datetime", "datetime.date"):
            merged[name] = target
    return merged


def _callee(node: ast.AST, aliases: dict[str, str]) -> str:
    if not isinstance(node, ast.Call):
        return ""
    name = qualified_name(node.func, aliases) or ""
    # `datetime.now` with `import datetime` names the module's function: the class's method
    if name.startswith("datetime.") and name.count(".") == 1:
        head = name.split(".", 1)[1]
        if head in ("now", "utcnow", "today", "fromisoformat", "fromtimestamp"):
            name = "datetime.datetime." + head
    return name


def _reads_clock(node: ast.AST, aliases: dict[str, str], clocked: set[str]) -> bool:
    for inner in ast.walk(node):
        if _callee(inner, aliases) in CLOCK_CALLS:
            return True
        if isinstance(inner, ast.Name) and inner.id in clocked:
            return True
    return False


def _clock_names(tree: ast.AST, aliases: dict[str, str]) -> set[str]:
    """Names bound from a clock reading (`now = datetime.now()`), followed through names
    bound from them."""
    names: set[str] = set()
    for _ in range(5):
        before = len(names)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Assign | ast.AnnAssign)
                and node.value is not None
                and _reads_clock(node.value, aliases, names)
            ):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        if len(names) == before:
            break
    return names


def _fixed(node: ast.AST, aliases: dict[str, str], names: dict[str, ast.expr]) -> bool:
    """A fixed instant: a date or datetime of literals, an ISO date, an epoch number, a year,
    or a value built from them (`START + 86400`, `datetime(...) + timedelta(days=13)`)."""
    if _instant(node, aliases) is not None:
        return True
    value = constant(node, aliases, names)
    if isinstance(value, date):
        return True
    if isinstance(value, str):
        return _iso_day(value) is not None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value >= EPOCH_SECONDS or value in YEARS
    return False


def _instant(node: ast.AST, aliases: dict[str, str]) -> date | None:
    """The day a literal instant names, or None."""
    name = _callee(node, aliases)
    if isinstance(node, ast.Call):
        if name in INSTANT_TYPES:
            return _constructed(node)
        if name.endswith(".fromisoformat") and node.args:
            return _instant(node.args[0], aliases)
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return _epoch_day(node.value)
    if isinstance(node, ast.Constant | ast.BinOp | ast.JoinedStr):
        return _iso_day(fold(node, aliases))
    return None


def _constructed(call: ast.Call) -> date | None:
    """`date(2026, 12, 1)`, `datetime(2026, 12, 1, 9)`: all literals."""
    values = [a.value for a in call.args if isinstance(a, ast.Constant) and type(a.value) is int]
    if not len(values) == len(call.args) >= 3:
        return None
    try:
        return date(values[0], values[1], values[2])
    except ValueError:
        return None


def _epoch_day(value: float) -> date | None:
    if isinstance(value, bool) or value < EPOCH_SECONDS:
        return None
    seconds = value / 1000 if value >= EPOCH_SECONDS * 1000 else value
    try:
        return (datetime(1970, 1, 1, tzinfo=UTC) + timedelta(seconds=seconds)).date()
    except OverflowError:
        return None


def _iso_day(text: str | None) -> date | None:
    found = ISO_DATE.search(text) if text is not None else None
    if found is None:
        return None
    try:
        return date.fromisoformat(found.group(0))
    except ValueError:
        return None


def _inside_instant(
    node: ast.AST,
    parents: dict[int, ast.AST],
    aliases: dict[str, str],
    names: dict[str, ast.expr],
) -> bool:
    """A piece of a bigger literal instant (the string inside `date.fromisoformat(...)`),
    reported with it."""
    parent = parents.get(id(node))
    while parent is not None:
        if _computed_instant(parent, aliases, names) is not None:
            return True
        parent = parents.get(id(parent))
    return False
