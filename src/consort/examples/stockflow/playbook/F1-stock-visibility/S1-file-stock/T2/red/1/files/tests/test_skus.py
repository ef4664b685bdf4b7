"""Registering SKUs (story S1)."""

from sqlalchemy import text

from tests.factories import unique_code


def test_registering_a_sku_answers_with_it(client):
    code = unique_code("BOLT")

    response = client.post("/api/skus", json={"code": code, "name": "Hex bolt M6"})

    assert response.status_code == 201
    assert response.json() == {"code": code, "name": "Hex bolt M6"}


def test_a_taken_sku_code_is_refused(client, db):
    code = unique_code("BOLT")
    first = client.post("/api/skus", json={"code": code, "name": "Hex bolt M6"})
    assert first.status_code == 201

    again = client.post("/api/skus", json={"code": code, "name": "Carriage bolt M8"})

    assert again.status_code == 409
    assert code in again.json()["detail"]
    names = db.execute(text("SELECT name FROM skus WHERE code = :code"), {"code": code})
    assert names.scalars().all() == ["Hex bolt M6"]
