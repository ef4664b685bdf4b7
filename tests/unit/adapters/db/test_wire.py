"""The driver-less catalog read: SCRAM-SHA-256 as RFC 7677 gives it, and what a server asks that
it does not speak (another login method, a message it cannot read) raised as `Unsupported`, so
the caller asks through psycopg; the server's refusals raised as `Refused`."""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Callable, Iterator

import pytest

from consort.adapters.db import wire

# RFC 7677, section 3: user "user", password "pencil".
CLIENT_NONCE = "rOprNGfwEbeRWgbNEkqO"
SERVER_FIRST = (
    b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
)
CLIENT_FINAL = (
    b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
    b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
)
SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


def test_scram_gives_the_rfc_7677_proof_and_checks_the_servers():
    scram = wire._Scram("pencil", nonce=CLIENT_NONCE, user="user")
    assert scram.client_first() == b"n,,n=user,r=" + CLIENT_NONCE.encode()
    assert scram.client_final(SERVER_FIRST) == CLIENT_FINAL
    scram.verify_server(SERVER_FINAL)
    with pytest.raises(wire.Refused, match="did not prove"):
        scram.verify_server(b"v=" + b"A" * 44)


def test_scram_refuses_a_nonce_that_is_not_an_extension_of_its_own():
    scram = wire._Scram("pencil", nonce="another", user="user")
    with pytest.raises(wire.Refused, match="nonce"):
        scram.client_final(SERVER_FIRST)


def _message(kind: bytes, body: bytes) -> bytes:
    return kind + struct.pack("!i", len(body) + 4) + body


@pytest.fixture
def server() -> Iterator[Callable[[bytes], int]]:
    """A listening socket that reads the startup message, then sends the given bytes and
    nothing more."""
    listeners: list[socket.socket] = []
    threads: list[threading.Thread] = []

    def serve(reply: bytes) -> int:
        listener = socket.create_server(("127.0.0.1", 0))
        listeners.append(listener)

        def answer() -> None:
            conn, _ = listener.accept()
            with conn:
                (length,) = struct.unpack("!i", conn.recv(4))
                remaining = length - 4
                while remaining:
                    remaining -= len(conn.recv(remaining))
                conn.sendall(reply)
                conn.shutdown(socket.SHUT_WR)  # and nothing more: the client reads the end
                conn.recv(1024)

        thread = threading.Thread(target=answer, daemon=True)
        thread.start()
        threads.append(thread)
        return int(listener.getsockname()[1])

    yield serve
    for thread in threads:
        thread.join(timeout=5)
    for listener in listeners:
        listener.close()


def _ask(port: int) -> list[wire.Row]:
    return wire.query(
        "127.0.0.1", port, "SELECT 1", user="u", password="p", dbname="postgres", timeout_s=5
    )


def test_an_md5_login_is_left_to_the_driver(server):
    port = server(_message(b"R", struct.pack("!i", 5) + b"salt"))
    with pytest.raises(wire.Unsupported, match="authentication request 5"):
        _ask(port)


def test_a_sasl_login_without_scram_sha_256_is_left_to_the_driver(server):
    port = server(_message(b"R", struct.pack("!i", 10) + b"SCRAM-SHA-256-PLUS\0\0"))
    with pytest.raises(wire.Unsupported, match="SASL"):
        _ask(port)


def test_a_message_it_cannot_read_is_left_to_the_driver(server):
    port = server(_message(b"R", b"\0"))  # an authentication request without its code
    with pytest.raises(wire.Unsupported, match="cannot read"):
        _ask(port)


def test_a_refused_login_says_what_the_server_said(server):
    body = b'SFATAL\0C28P01\0Mpassword authentication failed for user "u"\0\0'
    port = server(_message(b"E", body))
    with pytest.raises(wire.Refused, match='FATAL: password authentication failed for user "u"'):
        _ask(port)


def test_rows_come_as_text_and_null_as_none(server):
    login = _message(b"R", struct.pack("!i", 0)) + _message(b"Z", b"I")
    row = struct.pack("!h", 3) + struct.pack("!i", 2) + b"ab" + struct.pack("!i", -1)
    row += struct.pack("!i", 2) + "é".encode()
    answer = _message(b"T", b"") + _message(b"D", row) + _message(b"C", b"SELECT 1\0")
    port = server(login + answer + _message(b"Z", b"I"))
    assert _ask(port) == [("ab", None, "é")]


def test_a_closed_connection_is_an_os_error(server):
    port = server(b"")
    with pytest.raises(OSError, match="closed"):
        _ask(port)
