"""The stock-by-location page: what one location holds."""

from app.models.location import Location
from app.pages.html import page, table, text
from app.repositories.stock_records import SkuCount


def location_page(location: Location, counts: list[SkuCount]) -> str:
    rows = [[text(c.sku_code), text(c.sku_name), text(c.quantity)] for c in counts]
    body = (
        f"<h1>{text(location.name)}</h1>\n<p>Location {text(location.code)}</p>\n"
        + table(f"Stock at {location.name}", ["SKU", "Name", "Quantity"], rows)
    )
    return page(f"Stock at {location.name}", body)
