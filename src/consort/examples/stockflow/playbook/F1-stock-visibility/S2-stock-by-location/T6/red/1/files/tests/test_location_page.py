"""The stock-by-location page (story S2)."""

from tests.factories import file_count, register_location, register_sku
from tests.pages import table_rows

MARKUP_NAME = "<b>Bolts</b> & nuts"


def test_location_page_tables_its_stock_with_names_escaped(client):
    main = register_location(client, "MAIN", "Main warehouse")
    back = register_location(client, "BACK", "Back room")
    washer = register_sku(client, "WASHER", "Washer M6")
    bolts = register_sku(client, "BOLTS", MARKUP_NAME)
    anchor = register_sku(client, "ANCHOR", "Anchor bolt M10")
    file_count(client, main, washer, 40)
    file_count(client, main, bolts, 7)
    file_count(client, back, anchor, 3)

    page = client.get(f"/locations/{main}")

    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert table_rows(page.text) == [[bolts, MARKUP_NAME, "7"], [washer, "Washer M6", "40"]]
    assert "&lt;b&gt;Bolts&lt;/b&gt; &amp; nuts" in page.text
    assert MARKUP_NAME not in page.text
