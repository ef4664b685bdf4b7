"""The home page: every location, to pick one from (story S2)."""

from tests.factories import register_location
from tests.pages import table_rows


def test_home_page_lists_locations_in_code_order_with_links(client):
    main = register_location(client, "MAIN", "Main warehouse")
    back = register_location(client, "BACK", "Back room & yard")

    page = client.get("/")

    assert page.status_code == 200
    rows = table_rows(page.text)
    assert [back, "Back room & yard"] in rows
    assert [main, "Main warehouse"] in rows
    assert rows.index([back, "Back room & yard"]) < rows.index([main, "Main warehouse"])
    assert f'<a href="/locations/{back}">{back}</a>' in page.text
