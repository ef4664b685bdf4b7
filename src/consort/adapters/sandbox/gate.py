"""The one way out of a network-isolated run: a unix socket Consort serves, to one database.

A run sandbox with a network namespace of its own reaches nothing of the machine's network.
Its database is reached through this gate: a unix socket in a folder of Consort's own (bound
into the sandbox, where `bridge` carries `127.0.0.1:PORT` to it), served by threads of Consort's
process, which connect to the database server the run's URL names. The gate reads each
connection's PostgreSQL start-up message and lets through only the run's own database as the
run's own login: a developer's database on the same server (or any other login, the
superuser's included) is refused with a FATAL error the run's output shows, and recorded
(`refused`) so that a run can say what it tried to reach.

TLS is declined (the server's "N"): the start-up message must be read, and the only hop in
clear is loopback inside the machine, from the sandbox to Consort. A cancel request (which
carries no login, only a backend's secret key) is carried as it is.

A gate opened `held` admits connections (their start-up messages are read and judged at once)
but carries none to the server until `release()`: a run's test process may start, and import
its code, while the run's migrations are still being applied and read back; whatever it sends
the database waits until the child is migrated and judged, as if it had started afterwards.
Closing a held gate ends the connections it held without carrying them.
"""

from __future__ import annotations

import contextlib
import shutil
import socket
import struct
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

SOCKET_NAME = "db.sock"
MAX_STARTUP_BYTES = 10_000
SSL_REQUEST = 80877103
GSSENC_REQUEST = 80877104
CANCEL_REQUEST = 80877102
PROTOCOL_MAJOR = 3
CONNECT_TIMEOUT_S = 30.0
CHUNK = 65536


@dataclass(frozen=True)
class Refusal:
    """A connection the gate did not let through: who it asked to be, and for which database."""

    user: str
    database: str


class _Closed(Exception):
    """The client went away, or sent what is not a PostgreSQL start-up message."""


class Gate:
    """Serves `socket_path` while open; every connection goes to `server` or nowhere."""

    def __init__(
        self,
        folder: Path,
        server: tuple[str, int],
        database: str,
        user: str,
        *,
        held: bool = False,
    ) -> None:
        self.socket_path = folder / SOCKET_NAME
        self._server = server
        self._database = database
        self._user = user
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self.refused: list[Refusal] = []
        self._released = threading.Event()
        self._closed = False
        if not held:
            self._released.set()
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(str(self.socket_path))
        self._listener.listen(128)
        self._thread = threading.Thread(target=self._serve, daemon=True, name="consort-gate")
        self._thread.start()

    def release(self) -> None:
        """Carry the connections held so far, and every later one, to the server."""
        self._released.set()

    def close(self) -> None:
        self._closed = True
        self._released.set()  # wakes the held connections, which now end uncarried
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the accept
        self._listener.close()
        self._thread.join(timeout=CONNECT_TIMEOUT_S)
        with self._lock:
            still = list(self._open)
        for sock in still:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def _serve(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            threading.Thread(target=self._carry, args=(client,), daemon=True).start()

    def _track(self, sock: socket.socket) -> None:
        with self._lock:
            self._open.add(sock)

    def _untrack(self, sock: socket.socket) -> None:
        with self._lock:
            self._open.discard(sock)
        sock.close()

    def _carry(self, client: socket.socket) -> None:
        self._track(client)
        try:
            first = self._admitted(client)
        except (_Closed, OSError):
            self._untrack(client)
            return
        if first is None:
            self._untrack(client)
            return
        self._released.wait()
        if self._closed:
            self._untrack(client)
            return
        try:
            upstream = socket.create_connection(self._server, timeout=CONNECT_TIMEOUT_S)
        except OSError:
            _refuse(client, "the run's database server cannot be reached", "08006")
            self._untrack(client)
            return
        upstream.settimeout(None)
        self._track(upstream)
        try:
            upstream.sendall(first)
            back = threading.Thread(target=_pump, args=(upstream, client), daemon=True)
            back.start()
            _pump(client, upstream)
            back.join()
        except OSError:
            pass
        finally:
            self._untrack(upstream)
            self._untrack(client)

    def _admitted(self, client: socket.socket) -> bytes | None:
        """The start-up message to send on, or None when the connection was refused."""
        while True:
            message = _read_startup(client)
            code = struct.unpack("!I", message[4:8])[0]
            if code in (SSL_REQUEST, GSSENC_REQUEST):
                client.sendall(b"N")
                continue
            if code == CANCEL_REQUEST:
                return message
            if code >> 16 != PROTOCOL_MAJOR:
                raise _Closed
            params = _parameters(message[8:])
            user = params.get("user", "")
            database = params.get("database") or user
            if user == self._user and database == self._database:
                return message
            with self._lock:
                self.refused.append(Refusal(user, database))
            _refuse(
                client,
                f"Consort's run sandbox: this run may reach only its throwaway database "
                f"{self._database} as {self._user}, not {database} as {user}; its network is "
                f"isolated (map the run database to the project's settings in consort.toml's "
                f'env tables, e.g. POSTGRES_DB = "{{db.name}}")',
                "28000",
            )
            return None


def _read_exactly(client: socket.socket, count: int) -> bytes:
    data = b""
    while len(data) < count:
        chunk = client.recv(count - len(data))
        if not chunk:
            raise _Closed
        data += chunk
    return data


def _read_startup(client: socket.socket) -> bytes:
    head = _read_exactly(client, 4)
    length = struct.unpack("!I", head)[0]
    if length < 8 or length > MAX_STARTUP_BYTES:
        raise _Closed
    return head + _read_exactly(client, length - 4)


def _parameters(body: bytes) -> dict[str, str]:
    words = body.split(b"\0")
    params: dict[str, str] = {}
    for key, value in zip(words[0::2], words[1::2], strict=False):
        if not key:
            break
        params[key.decode("utf-8", "replace")] = value.decode("utf-8", "replace")
    return params


def _refuse(client: socket.socket, message: str, sqlstate: str) -> None:
    fields = b"".join(
        tag + text.encode() + b"\0"
        for tag, text in ((b"S", "FATAL"), (b"V", "FATAL"), (b"C", sqlstate), (b"M", message))
    )
    body = fields + b"\0"
    with contextlib.suppress(OSError):
        client.sendall(b"E" + struct.pack("!I", len(body) + 4) + body)


def _pump(source: socket.socket, target: socket.socket) -> None:
    try:
        while data := source.recv(CHUNK):
            target.sendall(data)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            target.shutdown(socket.SHUT_WR)


@contextlib.contextmanager
def opened_gate(
    server: tuple[str, int], database: str, user: str, *, held: bool = False
) -> Iterator[Gate]:
    """A gate in a fresh folder only Consort's user can enter, closed and removed after;
    `held`: carrying nothing until `Gate.release`."""
    folder = Path(tempfile.mkdtemp(prefix="consort-gate-"))
    try:
        gate = Gate(folder, server, database, user, held=held)
        try:
            yield gate
        finally:
            gate.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
