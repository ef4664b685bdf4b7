"""One read-only query to a PostgreSQL server without the database driver: for `consort status`
and `consort branch list`, whose whole use of the server is one read of the catalog.

Loading psycopg (with asyncio, ssl and its type adapters) costs more than the rest of such a
command's start-up; the frontend/backend protocol for one simple query is small: the startup
message, a SCRAM-SHA-256 (or trust, or clear-text) login, one `Query`, its rows as text, and
`Terminate`. Nothing else is spoken here: a server asking for anything more (another
authentication method, TLS, a protocol it cannot serve) raises `Unsupported`, and the caller asks
through psycopg instead, which then says what is wrong as it always did.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import socket
import struct

PROTOCOL_3 = 196608  # version 3.0, the only one servers speak since 7.4
SCRAM = "SCRAM-SHA-256"
AUTH_OK, AUTH_CLEARTEXT, AUTH_SASL, AUTH_SASL_CONTINUE, AUTH_SASL_FINAL = 0, 3, 10, 11, 12

Row = tuple[str | None, ...]


class Unsupported(Exception):
    """The server wants something this client does not speak: ask through the driver."""


class Refused(Exception):
    """The server refused the login or the query (its own message)."""


def query(
    host: str,
    port: int,
    sql: str,
    *,
    user: str,
    password: str,
    dbname: str,
    timeout_s: float,
    application_name: str = "consort",
) -> list[Row]:
    """The rows of one simple query, each value as the server's text (None for NULL).

    Raises OSError when the server cannot be reached, `Refused` when it refuses the login or
    the query, `Unsupported` when it asks for what only the driver speaks (or says what this
    client cannot read)."""
    with socket.create_connection((host, port), timeout=timeout_s) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            startup = {
                "user": user,
                "database": dbname,
                "application_name": application_name,
                "client_encoding": "UTF8",
            }
            return _exchange(_Link(sock), startup, password, sql)
        except (struct.error, ValueError, KeyError, IndexError) as exc:
            raise Unsupported(f"a message this client cannot read: {exc}") from exc


def _exchange(link: _Link, startup: dict[str, str], password: str, sql: str) -> list[Row]:
    body = struct.pack("!i", PROTOCOL_3) + b"".join(
        _cstring(k) + _cstring(v) for k, v in startup.items()
    )
    link.send_raw(struct.pack("!i", len(body) + 5) + body + b"\0")
    _login(link, password)
    link.send(b"Q", _cstring(sql))
    rows = _rows(link)
    link.send(b"X", b"")
    return rows


class _Link:
    """Framed messages over the socket: a type byte, a length that counts itself, a body."""

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.buffer = b""

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def send(self, kind: bytes, body: bytes) -> None:
        self.sock.sendall(kind + struct.pack("!i", len(body) + 4) + body)

    def _read(self, n: int) -> bytes:
        while len(self.buffer) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise OSError("the server closed the connection")
            self.buffer += chunk
        data, self.buffer = self.buffer[:n], self.buffer[n:]
        return data

    def receive(self) -> tuple[bytes, bytes]:
        head = self._read(5)
        (length,) = struct.unpack("!i", head[1:])
        if length < 4:
            raise Unsupported(f"a message of length {length}")
        return head[:1], self._read(length - 4)


def _cstring(text: str) -> bytes:
    return text.encode() + b"\0"


def _error_text(body: bytes) -> str:
    """An ErrorResponse's message field (`M`), with its severity."""
    fields = {f[:1]: f[1:].decode(errors="replace") for f in body.split(b"\0") if f}
    severity = fields.get(b"S", "ERROR")
    return f"{severity}: {fields.get(b'M', 'the server gave no message')}"


def _login(link: _Link, password: str) -> None:
    scram: _Scram | None = None
    while True:
        kind, body = link.receive()
        if kind == b"E":
            raise Refused(_error_text(body))
        if kind == b"Z":
            return
        if kind != b"R":
            continue  # ParameterStatus, BackendKeyData, NoticeResponse
        (code,) = struct.unpack("!i", body[:4])
        if code == AUTH_OK:
            continue
        if code == AUTH_CLEARTEXT:
            link.send(b"p", _cstring(password))
        elif code == AUTH_SASL:
            mechanisms = [m.decode() for m in body[4:].split(b"\0") if m]
            if SCRAM not in mechanisms:
                raise Unsupported(f"SASL mechanisms {mechanisms}")
            scram = _Scram(password)
            first = scram.client_first()
            link.send(b"p", _cstring(SCRAM) + struct.pack("!i", len(first)) + first)
        elif code == AUTH_SASL_CONTINUE and scram is not None:
            link.send(b"p", scram.client_final(body[4:]))
        elif code == AUTH_SASL_FINAL and scram is not None:
            scram.verify_server(body[4:])
        else:
            raise Unsupported(f"authentication request {code}")


def _rows(link: _Link) -> list[Row]:
    rows: list[Row] = []
    failure: str | None = None
    while True:
        kind, body = link.receive()
        if kind == b"D":
            rows.append(_data_row(body))
        elif kind == b"E":
            failure = _error_text(body)
        elif kind == b"Z":
            if failure is not None:
                raise Refused(failure)
            return rows
        elif kind in (b"G", b"H", b"W", b"d"):
            raise Unsupported("a COPY")  # never asked for here; the driver knows what to do


def _data_row(body: bytes) -> Row:
    (count,) = struct.unpack("!h", body[:2])
    at, values = 2, list[str | None]()
    for _ in range(count):
        (size,) = struct.unpack("!i", body[at : at + 4])
        at += 4
        if size < 0:
            values.append(None)
        else:
            values.append(body[at : at + size].decode())
            at += size
    return tuple(values)


class _Scram:
    """SCRAM-SHA-256 without channel binding (RFC 5802, RFC 7677), as libpq does it over a
    connection without TLS. The password is used as given: Consort's are hex digits, which
    SASLprep leaves as they are."""

    def __init__(self, password: str, *, nonce: str | None = None, user: str = ""):
        # The server takes the user from the startup message, so libpq leaves this one empty.
        self.password = password.encode()
        self.nonce = nonce or base64.b64encode(os.urandom(18)).decode()
        self.first_bare = f"n={user},r={self.nonce}"
        self.auth_message = b""
        self.salted = b""

    def client_first(self) -> bytes:
        return f"n,,{self.first_bare}".encode()

    def client_final(self, server_first: bytes) -> bytes:
        fields = dict(part.split("=", 1) for part in server_first.decode().split(","))
        nonce, salt, rounds = fields["r"], base64.b64decode(fields["s"]), int(fields["i"])
        if not nonce.startswith(self.nonce):
            raise Refused("the server's SCRAM nonce does not extend ours")
        self.salted = hashlib.pbkdf2_hmac("sha256", self.password, salt, rounds)
        client_key = _hmac(self.salted, b"Client Key")
        without_proof = f"c=biws,r={nonce}"  # biws: "n,,", no channel binding
        self.auth_message = f"{self.first_bare},{server_first.decode()},{without_proof}".encode()
        signature = _hmac(hashlib.sha256(client_key).digest(), self.auth_message)
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def verify_server(self, server_final: bytes) -> None:
        fields = dict(part.split("=", 1) for part in server_final.decode().split(","))
        expected = _hmac(_hmac(self.salted, b"Server Key"), self.auth_message)
        if not hmac.compare_digest(base64.b64decode(fields.get("v", "")), expected):
            raise Refused("the server did not prove it knows the password (SCRAM)")


def _hmac(key: bytes, message: bytes) -> bytes:
    return hmac.new(key, message, hashlib.sha256).digest()
