"""The stock of a location, as JSON (story S2)."""

from tests.factories import file_count, register_location, register_sku


def test_stock_at_a_location_lists_its_skus_in_code_order(client):
    main = register_location(client, "MAIN", "Main warehouse")
    back = register_location(client, "BACK", "Back room")
    anchor = register_sku(client, "ANCHOR", "Anchor bolt M10")
    bolt = register_sku(client, "BOLT", "Hex bolt M6")
    file_count(client, main, bolt, 8)
    file_count(client, main, anchor, 3)
    file_count(client, back, bolt, 2)

    response = client.get(f"/api/locations/{main}/stock")

    assert response.status_code == 200
    assert response.json() == {
        "location": main,
        "name": "Main warehouse",
        "stock": [
            {"sku": anchor, "name": "Anchor bolt M10", "quantity": 3},
            {"sku": bolt, "name": "Hex bolt M6", "quantity": 8},
        ],
    }
