"""Registering locations (story S1)."""

from tests.factories import unique_code


def test_a_location_code_can_be_registered_once(client):
    code = unique_code("MAIN")

    response = client.post("/api/locations", json={"code": code, "name": "Main warehouse"})

    assert response.status_code == 201
    assert response.json() == {"code": code, "name": "Main warehouse"}
    again = client.post("/api/locations", json={"code": code, "name": "Back room"})
    assert again.status_code == 409
