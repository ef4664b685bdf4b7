"""Filing stock counts per location (story S1)."""

from sqlalchemy import text

from tests.factories import file_count, register_location, register_sku

QUANTITIES = text(
    "SELECT r.quantity FROM stock_records r"
    " JOIN skus s ON s.id = r.sku_id JOIN locations l ON l.id = r.location_id"
    " WHERE s.code = :sku AND l.code = :location"
)


def test_filing_a_count_again_replaces_it(client, db):
    sku = register_sku(client)
    location = register_location(client)

    first = file_count(client, location, sku, 5)
    second = file_count(client, location, sku, 8)

    assert first.status_code == 200
    assert first.json() == {"location": location, "sku": sku, "quantity": 5}
    assert second.status_code == 200
    assert second.json() == {"location": location, "sku": sku, "quantity": 8}
    quantities = db.execute(QUANTITIES, {"sku": sku, "location": location}).scalars().all()
    assert quantities == [8]


def test_a_negative_count_is_refused(client, db):
    sku = register_sku(client)
    location = register_location(client)

    response = file_count(client, location, sku, -3)

    assert response.status_code == 422
    quantities = db.execute(QUANTITIES, {"sku": sku, "location": location}).scalars().all()
    assert quantities == []
