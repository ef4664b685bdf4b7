"""The SKU detail page: where a SKU is stocked, and how many there are in all."""

from app.pages.html import code_link, page, table, text
from app.services.stock import SkuStock


def sku_page(stock: SkuStock) -> str:
    sku = stock.sku
    rows = [
        [code_link("/locations", c.location_code), text(c.location_name), text(c.quantity)]
        for c in stock.counts
    ]
    body = (
        f"<h1>{text(sku.name)}</h1>\n<p>SKU {text(sku.code)}</p>\n"
        + table(f"Where {sku.name} is stocked", ["Location", "Name", "Quantity"], rows)
        + f"\n<p>Total on hand: {text(stock.total)}</p>"
    )
    return page(sku.name, body)
