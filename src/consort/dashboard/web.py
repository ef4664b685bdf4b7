"""The dashboard's web app: the page, its JSON views, the live feed and the two decisions.

Reads go through the command API (`consort.app`) afresh on each request; the live feed sends
each event appended to the ledger as a server-sent event (`event: ledger`, `id:` its seq), and
the page fetches the overview again when one arrives.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from consort.app.errors import ConsortError, ExitCode
from consort.app.project import Project
from consort.dashboard.guard import Guard, Refusal

STATIC = Path(__file__).resolve().parent / "static"
POLL_S = 0.1  # how often the live feed looks at the ledger's size: one stat per look
KEEPALIVE_S = 15.0  # a comment line this often keeps proxies and browsers from timing out
SECURITY_HEADERS = {
    "content-security-policy": "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; "
    "form-action 'none'",
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
}
ERROR_STATUS = {ExitCode.USAGE: 400, ExitCode.INTEGRITY: 409, ExitCode.ESCALATION: 409}


class HostGuard:
    """Refuses every request whose Host is not the dashboard's own; adds the security headers."""

    def __init__(self, app: ASGIApp, guard: Guard) -> None:
        self.app = app
        self.guard = guard

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = self.guard.check_host(Request(scope))
        if refusal is not None:
            await _refused(refusal)(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers += [(k.encode(), v.encode()) for k, v in SECURITY_HEADERS.items()]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, with_headers)


def _refused(refusal: Refusal) -> JSONResponse:
    return JSONResponse({"error": refusal.message, "refused": refusal.name}, refusal.status)


def _failed(exc: ConsortError) -> JSONResponse:
    body = {"error": exc.message, "fix": exc.fix, "exit_code": int(exc.code)}
    return JSONResponse(body, ERROR_STATUS.get(exc.code, 500))


class Views:
    """The endpoints, over the project at or above one checkout, read afresh on each request."""

    def __init__(self, checkout: Path, guard: Guard) -> None:
        self.checkout = checkout
        self.guard = guard

    def project(self) -> Project:
        from consort.app.project import find_project

        return find_project(self.checkout)

    @staticmethod
    def answer(call: Callable[[], Any]) -> Response:
        try:
            return JSONResponse(call())
        except ConsortError as exc:
            return _failed(exc)

    def page(self, _request: Request) -> Response:
        return FileResponse(STATIC / "index.html", media_type="text/html")

    def no_icon(self, _request: Request) -> Response:
        return Response(status_code=204)

    def overview(self, _request: Request) -> Response:
        from consort.app.dashboard import overview, why_read_only

        def run() -> dict[str, Any]:
            data = overview(self.project()).as_json()
            allowed = self.guard.token is not None
            data["decisions_allowed"] = allowed
            data["read_only_reason"] = None if allowed else (why_read_only() or "no token")
            return data

        return self.answer(run)

    def verify(self, _request: Request) -> Response:
        from consort.app.verify import verify

        return self.answer(lambda: verify(self.project()).as_json())

    def branch_diff(self, request: Request) -> Response:
        from consort.app.branch import diff

        name = request.query_params.get("name", "")
        return self.answer(lambda: diff(self.project(), name, None).as_json())

    def cycle(self, request: Request) -> Response:
        from consort.app.evidence import cycle_evidence

        subject = request.query_params.get("subject", "")
        return self.answer(lambda: cycle_evidence(self.project(), subject).as_json())

    async def events(self, request: Request) -> Response:
        from consort.app.dashboard import feed

        since = request.headers.get("last-event-id") or request.query_params.get("since") or "0"
        ledger = feed(self.project(), int(since) if since.isdigit() else 0)

        async def stream() -> AsyncIterator[bytes]:
            yield b"retry: 1000\n\n"
            quiet = 0.0
            while True:
                batch = ledger.poll()
                for event in batch:
                    data = json.dumps(event, separators=(",", ":"))
                    yield f"id: {event['seq']}\nevent: ledger\ndata: {data}\n\n".encode()
                quiet = 0.0 if batch else quiet + POLL_S
                if quiet >= KEEPALIVE_S:
                    quiet = 0.0
                    yield b": keep-alive\n\n"
                await anyio.sleep(POLL_S)

        return StreamingResponse(
            stream(), media_type="text/event-stream", headers={"x-accel-buffering": "no"}
        )

    async def decide(self, request: Request, make: Callable[[dict[str, str]], Any]) -> Response:
        refusal = self.guard.check_decision(request)
        if refusal is not None:
            return _refused(refusal)
        try:
            body = await request.json()
        except ValueError:
            return JSONResponse({"error": "the body is not JSON"}, 400)
        if not isinstance(body, dict):
            return JSONResponse({"error": "the body is a JSON object"}, 400)
        fields = {k: v for k, v in body.items() if isinstance(v, str)}
        try:
            outcome = await anyio.to_thread.run_sync(lambda: make(fields))
        except ConsortError as exc:
            return _failed(exc)
        return JSONResponse(outcome.as_json())

    async def approve(self, request: Request) -> Response:
        from consort.app.dashboard import approve_from_page

        def make(f: dict[str, str]) -> Any:
            return approve_from_page(
                self.project(), f.get("gate", ""), f.get("subject", ""), f.get("note")
            )

        return await self.decide(request, make)

    async def reject(self, request: Request) -> Response:
        from consort.app.dashboard import reject_from_page

        def make(f: dict[str, str]) -> Any:
            return reject_from_page(
                self.project(),
                f.get("gate", ""),
                f.get("subject", ""),
                f.get("note", ""),
                f.get("artifact"),
            )

        return await self.decide(request, make)


def create_app(checkout: Path, guard: Guard) -> ASGIApp:
    views = Views(checkout, guard)
    routes = [
        Route("/", views.page),
        Route("/favicon.ico", views.no_icon),
        Route("/api/overview", views.overview),
        Route("/api/verify", views.verify),
        Route("/api/branch-diff", views.branch_diff),
        Route("/api/cycle", views.cycle),
        Route("/api/events", views.events),
        Route("/api/approve", views.approve, methods=["POST"]),
        Route("/api/reject", views.reject, methods=["POST"]),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    return HostGuard(Starlette(routes=routes), guard)
