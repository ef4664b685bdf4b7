"""The page shell and the table every page uses.

Stored text reaches a page only through `text` and `code_link` (or the caption and headings
`table` escapes itself), so a name such as "<b>Bolts</b> & nuts" is shown as typed and never
read as markup.
"""

from collections.abc import Sequence
from html import escape
from urllib.parse import quote

STYLE = (
    "body{font-family:system-ui,sans-serif;margin:1rem auto;max-width:48rem;padding:0 1rem}"
    "table{border-collapse:collapse;width:100%}"
    "caption{text-align:left;font-weight:600;padding:.5rem 0}"
    "th,td{padding:.4rem .6rem;border-bottom:1px solid #ccc;text-align:left}"
    "td:last-child,th:last-child{text-align:right}"
)


def text(value: object) -> str:
    """Stored or typed text, made safe to place in a page."""
    return escape(str(value))


def code_link(prefix: str, code: str) -> str:
    """A link labelled with a code to its page under `prefix`, e.g. /skus/BOLT-M6."""
    return f'<a href="{prefix}/{quote(code, safe="")}">{text(code)}</a>'


def table(caption: str, headings: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A table; each cell of `rows` is markup already made safe (with `text`)."""
    head = "".join(f'<th scope="col">{text(h)}</th>' for h in headings)
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    return (
        f"<table>\n<caption>{text(caption)}</caption>\n"
        f"<thead><tr>{head}</tr></thead>\n<tbody>{body}</tbody>\n</table>"
    )


def page(title: str, body: str) -> str:
    """A whole HTML document around `body`, markup built with `text` and `table`."""
    return (
        '<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{text(title)} - StockFlow</title>\n<style>{STYLE}</style>\n</head>\n"
        f"<body>\n<main>\n{body}\n</main>\n</body>\n</html>\n"
    )


def not_found_page(sentence: str) -> str:
    """The page for a code nothing has: what was asked for, in plain words."""
    return page("Not found", f"<h1>Not found</h1>\n<p>{text(sentence)}</p>")
