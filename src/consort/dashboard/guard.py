"""Who may ask what of the dashboard.

Every request must name the dashboard's own host (127.0.0.1 or localhost at its port), which
stops a page elsewhere from reaching it through a DNS name rebound to 127.0.0.1. A request that
changes anything must also come from the dashboard's own origin, carry JSON (which a form on
another site cannot send without a preflight the dashboard never answers) and the token printed
on the terminal, in a header: a token in the URL is never read, so a logged URL holds none.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from enum import Enum

from starlette.requests import Request

TOKEN_HEADER = "x-consort-token"  # noqa: S105 -- the header's name, not a token
LOOPBACK = "127.0.0.1"


class Refusal(Enum):
    """Why a request is refused, and the HTTP status that says so."""

    HOST = (403, "the Host header does not name this dashboard")
    ORIGIN = (403, "the request does not come from this dashboard's own page")
    CONTENT_TYPE = (415, "a decision is sent as application/json")
    READ_ONLY = (403, "this dashboard is read-only")
    TOKEN = (401, "the token printed where `consort dashboard` started is needed")

    @property
    def status(self) -> int:
        return self.value[0]

    @property
    def message(self) -> str:
        return self.value[1]


@dataclass(frozen=True)
class Guard:
    port: int
    token: str | None  # None: no decisions from the page

    @property
    def hosts(self) -> frozenset[str]:
        return frozenset({f"{LOOPBACK}:{self.port}", f"localhost:{self.port}"})

    @property
    def origins(self) -> frozenset[str]:
        return frozenset(f"http://{host}" for host in self.hosts)

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}/"

    def check_host(self, request: Request) -> Refusal | None:
        return None if request.headers.get("host", "") in self.hosts else Refusal.HOST

    def check_decision(self, request: Request) -> Refusal | None:
        """Host, origin, content type and token, in that order; None when all hold."""
        if self.check_host(request) is not None:
            return Refusal.HOST
        if request.headers.get("origin") not in self.origins:
            return Refusal.ORIGIN
        media = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if media != "application/json":
            return Refusal.CONTENT_TYPE
        if self.token is None:
            return Refusal.READ_ONLY
        given = request.headers.get(TOKEN_HEADER, "")
        if not hmac.compare_digest(given.encode("utf-8"), self.token.encode("utf-8")):
            return Refusal.TOKEN
        return None
