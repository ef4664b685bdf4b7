"""The SKU detail page (story S3)."""

from tests.factories import file_count, register_location, register_sku
from tests.pages import table_rows

MARKUP_NAME = "Nuts & bolts <M6>"


def test_sku_page_lists_locations_and_total_with_name_escaped(client):
    sku = register_sku(client, "NUTS", MARKUP_NAME)
    main = register_location(client, "MAIN", "Main warehouse")
    back = register_location(client, "BACK", "Back room")
    file_count(client, main, sku, 5)
    file_count(client, back, sku, 7)

    page = client.get(f"/skus/{sku}")

    assert page.status_code == 200
    assert table_rows(page.text) == [[back, "Back room", "7"], [main, "Main warehouse", "5"]]
    assert f'<a href="/locations/{back}">{back}</a>' in page.text
    assert f'<a href="/locations/{main}">{main}</a>' in page.text
    assert "Total on hand: 12" in page.text
    assert "Nuts &amp; bolts &lt;M6&gt;" in page.text
    assert MARKUP_NAME not in page.text
    location_page = client.get(f"/locations/{main}")
    assert f'<a href="/skus/{sku}">{sku}</a>' in location_page.text


def test_a_sku_filed_nowhere_says_so_with_a_total_of_zero(client):
    sku = register_sku(client, "NEW", "Wall plug 8 mm")

    page = client.get(f"/skus/{sku}")

    assert page.status_code == 200
    assert "Not filed at any location yet." in page.text
    assert table_rows(page.text) == []
    assert "Total on hand: 0" in page.text
