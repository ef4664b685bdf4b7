"""The stock-by-location page: what one location holds."""

from app.pages.html import code_link, page, table, text
from app.services.stock import LocationStock


def location_page(stock: LocationStock) -> str:
    location = stock.location
    rows = [
        [code_link("/skus", c.sku_code), text(c.sku_name), text(c.quantity)]
        for c in stock.counts
    ]
    body = (
        f"<h1>{text(location.name)}</h1>\n<p>Location {text(location.code)}</p>\n"
        + table(f"Stock at {location.name}", ["SKU", "Name", "Quantity"], rows)
    )
    return page(f"Stock at {location.name}", body)
