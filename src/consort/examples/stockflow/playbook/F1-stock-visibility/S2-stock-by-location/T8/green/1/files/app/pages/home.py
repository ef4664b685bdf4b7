"""The home page: every location, each leading to its stock."""

from app.models.location import Location
from app.pages.html import page, table, text


def home_page(locations: list[Location]) -> str:
    rows = [
        [f'<a href="/locations/{text(loc.code)}">{text(loc.code)}</a>', text(loc.name)]
        for loc in locations
    ]
    body = "<h1>StockFlow</h1>\n" + table("Locations", ["Location", "Name"], rows)
    return page("Locations", body)
