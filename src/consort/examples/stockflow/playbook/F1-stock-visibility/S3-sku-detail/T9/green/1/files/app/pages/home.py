"""The home page: every location, each leading to its stock."""

from app.models.location import Location
from app.pages.html import code_link, page, table, text


def home_page(locations: list[Location]) -> str:
    rows = [[code_link("/locations", loc.code), text(loc.name)] for loc in locations]
    body = "<h1>StockFlow</h1>\n" + table("Locations", ["Location", "Name"], rows)
    return page("Locations", body)
