"""Paths hidden in text the guard cannot run: inline programs and patches.

Inline programs (`python -c`, `node -e`, a here-document fed to `python -`) are not parsed: when
the code calls a file-changing API, every string literal in it is taken for a path it may change
(a literal with spaces for a shell command, read by the caller). Literal paths only — a path the
program computes is not seen.

Patches: the files a unified diff (`--- a/x`, `+++ b/x`, `diff --git a/x b/x`) or a Codex
`apply_patch` envelope (`*** Update File: x`, `*** Add File:`, `*** Delete File:`,
`*** Move to:`) touches.
"""

from __future__ import annotations

import re

_WRITE_API = re.compile(
    r"write_text|write_bytes|\.write\s*\(|writelines|unlink|\bremove\s*\(|rmtree|rmdir|"
    r"\brename\s*\(|\.replace\s*\(|\bmove\s*\(|copyfile|copytree|copy2?\s*\(|truncate|"
    r"\btouch\s*\(|writeFile|appendFile|rmSync|unlinkSync|renameSync|copyFileSync|"
    r"File\.(write|open|delete|rename)|FileUtils|os\.system|subprocess|Popen|check_call|"
    r"check_output|spawn|execSync|\bsystem\s*\(|\bunlink\b"
)
# open("x", "w"), open(p, mode="a+"), open("x", 'wb') ...
_OPEN_FOR_WRITING = re.compile(r"""\bopen\s*\([^)]*?['"][rbt]*[wax+][rbt+]*['"]""")
_LITERAL = re.compile(r"""(?P<q>['"])(?P<s>(?:\\.|(?!(?P=q)).)*)(?P=q)""", re.DOTALL)
_RECURSIVE_API = re.compile(r"rmtree|copytree|recursive|rm_rf|rm_r\b|-r[f]?\b|-fr\b")


def code_targets(code: str) -> list[tuple[str, bool]]:
    """(literal, recursive) for each string literal of `code` that may name a changed path;
    nothing when the code calls no file-changing API."""
    if not (_WRITE_API.search(code) or _OPEN_FOR_WRITING.search(code)):
        return []
    recursive = _RECURSIVE_API.search(code) is not None
    found: list[tuple[str, bool]] = []
    for match in _LITERAL.finditer(code):
        text = match.group("s")
        if not text.strip() or (text.strip() in (".", "./") and not recursive):
            continue
        if len(text) == 1 or re.fullmatch(r"[rwxab+t]{1,3}", text):
            continue  # a mode string such as "w" or "rb"
        found.append((text, recursive))
    return found


_ENVELOPE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+?)\s*$|^\*\*\* Move to: (.+?)\s*$")
_DIFF_GIT = re.compile(r"^diff --git (\S+) (\S+)\s*$")
_DIFF_SIDE = re.compile(r"^(?:---|\+\+\+) (\S+)")


def patch_paths(text: str, *, strip: int | None = None) -> list[str]:
    """The paths a patch touches (both sides of renames; /dev/null left out).

    `strip` is patch's -p: leading components removed from unified-diff paths. None guesses:
    `a/x` and `b/x` lose their first component, as `git apply` does.
    """
    found: list[str] = []
    for line in text.splitlines():
        envelope = _ENVELOPE.match(line)
        if envelope:
            found.append(envelope.group(1) or envelope.group(2))
            continue
        names: list[str] = []
        diff_git = _DIFF_GIT.match(line)
        if diff_git:
            names = [diff_git.group(1), diff_git.group(2)]
        else:
            side = _DIFF_SIDE.match(line)
            if side:
                names = [side.group(1)]
        for name in names:
            if name != "/dev/null":
                found.append(_strip(name, strip))
    return list(dict.fromkeys(found))


def _strip(name: str, strip: int | None) -> str:
    parts = name.split("/")
    if strip is None:
        return "/".join(parts[1:]) if len(parts) > 1 and parts[0] in ("a", "b") else name
    return "/".join(parts[strip:]) if len(parts) > strip else parts[-1]
