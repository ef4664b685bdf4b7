"""A SKU's stock at every location, as JSON (story S3)."""

from tests.factories import file_count, register_location, register_sku


def test_sku_detail_lists_its_stock_per_location_and_the_total(client):
    bolt = register_sku(client, "BOLT", "Hex bolt M6")
    main = register_location(client, "MAIN", "Main warehouse")
    back = register_location(client, "BACK", "Back room")
    file_count(client, main, bolt, 5)
    file_count(client, back, bolt, 7)

    response = client.get(f"/api/skus/{bolt}")

    assert response.status_code == 200
    assert response.json() == {
        "code": bolt,
        "name": "Hex bolt M6",
        "stock": [
            {"location": back, "name": "Back room", "quantity": 7},
            {"location": main, "name": "Main warehouse", "quantity": 5},
        ],
        "total": 12,
    }
