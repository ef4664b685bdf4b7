"""The SKU detail page: where a SKU is stocked, and how many there are in all."""

from app.pages.html import code_link, page, table, text
from app.services.stock import SkuStock


def sku_page(stock: SkuStock) -> str:
    sku = stock.sku
    body = f"<h1>{text(sku.name)}</h1>\n<p>SKU {text(sku.code)}</p>\n" + _where(stock)
    return page(sku.name, body + f"\n<p>Total on hand: {text(stock.total)}</p>")


def _where(stock: SkuStock) -> str:
    if not stock.counts:
        return "<p>Not filed at any location yet.</p>"
    rows = [
        [code_link("/locations", c.location_code), text(c.location_name), text(c.quantity)]
        for c in stock.counts
    ]
    return table(f"Where {stock.sku.name} is stocked", ["Location", "Name", "Quantity"], rows)
