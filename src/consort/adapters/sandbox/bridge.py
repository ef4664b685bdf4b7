"""Inside a network-isolated run sandbox: the run's database at the address its URL names.

A run with a network namespace of its own has loopback alone, so `127.0.0.1:PORT` (the host and
port in its DATABASE_URL and `{db.*}` values) leads nowhere until something listens there. This
program, started by bubblewrap in place of the run's command, listens on that address, forks a
server that carries every connection to a unix socket bound into the sandbox (the run's gate,
served by Consort outside: see `gate`), and then becomes the run's command (exec): the command
is still bubblewrap's child, its exit code and signals are its own. The server ends with the
sandbox's PID namespace; the run's code gains nothing by ending it sooner (it loses its
database).

It is run by path, with the standard library alone (`python -I -S bridge.py PORT SOCKET --
ARGV...`): nothing of Consort's package, or of the project's environment, is imported.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import threading

CHUNK = 65536
BACKLOG = 128


def _pump(source: socket.socket, target: socket.socket) -> None:
    try:
        while data := source.recv(CHUNK):
            target.sendall(data)
    except OSError:
        pass
    finally:
        for end, how in ((target, socket.SHUT_WR), (source, socket.SHUT_RD)):
            with contextlib.suppress(OSError):
                end.shutdown(how)


def _carry(client: socket.socket, socket_path: str) -> None:
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(socket_path)
    except OSError:
        client.close()
        upstream.close()
        return
    back = threading.Thread(target=_pump, args=(upstream, client), daemon=True)
    back.start()
    _pump(client, upstream)
    back.join()
    client.close()
    upstream.close()


def _serve(listener: socket.socket, socket_path: str) -> None:
    while True:
        try:
            client, _ = listener.accept()
        except OSError:
            continue
        threading.Thread(target=_carry, args=(client, socket_path), daemon=True).start()


def _detach(keep: int) -> None:
    """The server holds nothing of the run's: not its output (a run's output is read until
    every holder closes it), not its report pipe or secret input."""
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.closerange(3, keep)
    os.closerange(keep + 1, os.sysconf("SC_OPEN_MAX"))


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[2] != "--":
        print("usage: bridge.py PORT SOCKET -- ARGV...", file=sys.stderr)
        return 2
    port, socket_path, command = int(argv[0]), argv[1], argv[3:]
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(BACKLOG)  # listening before the command starts: its first connect works
    if os.fork() == 0:
        _detach(listener.fileno())
        _serve(listener, socket_path)
        os._exit(0)
    listener.close()
    try:
        os.execvp(command[0], command)  # noqa: S606 -- becomes the run's command, as bwrap would run it
    except OSError as exc:
        print(f"{command[0]}: {exc.strerror}", file=sys.stderr)
        return 127
    return 127  # not reached: exec replaced this process


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
