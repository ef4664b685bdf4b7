"""Test data with codes no other test uses.

One database serves a whole test run, so every test makes its own SKUs and locations under fresh
codes instead of cleaning up after itself. The helpers go through the public API, as a clerk does.
"""

import uuid


def unique_code(prefix: str) -> str:
    """A code such as "BOLT-3F9A12C4": the prefix sorts it, the suffix makes it unique."""
    return f"{prefix}-{uuid.uuid4().hex[:8].upper()}"


def register_sku(client, prefix: str = "SKU", name: str = "Hex bolt M6") -> str:
    code = unique_code(prefix)
    response = client.post("/api/skus", json={"code": code, "name": name})
    assert response.status_code == 201, response.text
    return code


def register_location(client, prefix: str = "LOC", name: str = "Main warehouse") -> str:
    code = unique_code(prefix)
    response = client.post("/api/locations", json={"code": code, "name": name})
    assert response.status_code == 201, response.text
    return code


def file_count(client, location: str, sku: str, quantity: int):
    return client.put(f"/api/locations/{location}/stock/{sku}", json={"quantity": quantity})
