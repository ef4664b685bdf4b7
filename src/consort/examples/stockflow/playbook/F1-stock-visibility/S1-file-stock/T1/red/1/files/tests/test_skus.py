"""Registering SKUs (story S1)."""

from tests.factories import unique_code


def test_registering_a_sku_answers_with_it(client):
    code = unique_code("BOLT")

    response = client.post("/api/skus", json={"code": code, "name": "Hex bolt M6"})

    assert response.status_code == 201
    assert response.json() == {"code": code, "name": "Hex bolt M6"}
