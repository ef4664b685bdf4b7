"""Reading HTML pages the way a person reads them: the text of a table's body rows."""

from html.parser import HTMLParser


class _TableBody(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self._in_body = False
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "tbody":
            self._in_body = True
        elif tag == "tr" and self._in_body:
            self.rows.append([])
        elif tag in ("td", "th") and self._in_body:
            self._cell = []

    def handle_endtag(self, tag):
        if tag == "tbody":
            self._in_body = False
        elif tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def table_rows(html: str) -> list[list[str]]:
    """Each row of the page's table bodies as the text of its cells (entities decoded)."""
    parser = _TableBody()
    parser.feed(html)
    return parser.rows
