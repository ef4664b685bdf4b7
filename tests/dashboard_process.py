"""`consort dashboard` as a real child process on 127.0.0.1, optionally on a pseudo-terminal
(as a person starts it, so that it makes a token), and a small HTTP client for it."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import httpx

START_TIMEOUT_S = 120  # generous: a loaded machine starts Python slowly; only a hang fails
URL_LINE = re.compile(r"Consort dashboard: (http://127\.0\.0\.1:(\d+)/)")
TOKEN_LINE = re.compile(r"Token for approving and rejecting on the page: (\S+)\r?\n")
READ_ONLY_LINE = re.compile(r"Read-only: .*\n")


@dataclass
class Dashboard:
    process: subprocess.Popen[bytes]
    url: str
    port: int
    token: str | None
    output: list[bytes] = field(default_factory=list)  # everything it wrote, kept by a reader

    @property
    def origin(self) -> str:
        return self.url.rstrip("/")

    def text(self) -> str:
        return b"".join(self.output).decode("utf-8", "replace")

    def client(self, **kwargs: object) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=120, **kwargs)  # type: ignore[arg-type]

    def decide(
        self,
        action: str,
        body: Mapping[str, str],
        *,
        token: str | None = None,
        origin: str | None = "own",
        content_type: str = "application/json",
        host: str | None = None,
        query: str = "",
    ) -> httpx.Response:
        """POST a decision the way the page does, with any of its parts changed."""
        import json

        headers = {"content-type": content_type}
        if origin is not None:
            headers["origin"] = self.origin if origin == "own" else origin
        if token is not None:
            headers["x-consort-token"] = token
        if host is not None:
            headers["host"] = host
        with self.client() as client:
            return client.post(f"/api/{action}{query}", content=json.dumps(body), headers=headers)


def _drain(stream: int, into: list[bytes]) -> None:
    while True:
        try:
            chunk = os.read(stream, 4096)
        except OSError:  # EIO: the terminal's other end closed
            return
        if not chunk:
            return
        into.append(chunk)


@contextlib.contextmanager
def running_dashboard(
    root: Path,
    *,
    terminal: bool,
    env: Mapping[str, str] | None = None,
    args: Sequence[str] = (),
) -> Iterator[Dashboard]:
    environment = {k: v for k, v in os.environ.items() if k != "CONSORT_TASK"}
    environment.update({"COLUMNS": "200", **(env or {})})
    argv = [sys.executable, "-m", "consort", "dashboard", "--port", "0", *args]
    output: list[bytes] = []
    if terminal:
        master, slave = os.openpty()
        process = subprocess.Popen(
            argv,
            cwd=root,
            env=environment,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            start_new_session=True,
        )
        os.close(slave)
        reader = master
    else:
        read_end, write_end = os.pipe()
        process = subprocess.Popen(
            argv,
            cwd=root,
            env=environment,
            stdin=subprocess.DEVNULL,
            stdout=write_end,
            stderr=write_end,
            start_new_session=True,
        )
        os.close(write_end)
        reader = read_end
    thread = threading.Thread(target=_drain, args=(reader, output), daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        found = None
        while time.monotonic() < deadline and process.poll() is None:
            text = b"".join(output).decode("utf-8", "replace")
            found = URL_LINE.search(text)
            # whole lines only: a token read before its line ended would be cut short
            if found and (TOKEN_LINE.search(text) or READ_ONLY_LINE.search(text)):
                break
            time.sleep(0.05)
        text = b"".join(output).decode("utf-8", "replace")
        assert found is not None, f"the dashboard did not start:\n{text}"
        token = TOKEN_LINE.search(text)
        yield Dashboard(
            process,
            found.group(1),
            int(found.group(2)),
            token.group(1) if token else None,
            output,
        )
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGINT)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=30)
        thread.join(timeout=10)
        os.close(reader)


@contextlib.contextmanager
def editor_dashboard(root: Path, *, env: Mapping[str, str] | None = None) -> Iterator[Dashboard]:
    """`consort dashboard --editor` as the VS Code extension starts it: every stream a pipe, the
    URL and token read from the one JSON line it prints; closing its input stops it."""
    import json

    environment = {k: v for k, v in os.environ.items() if k != "CONSORT_TASK"}
    environment.update(env or {})
    process = subprocess.Popen(
        [sys.executable, "-m", "consort", "dashboard", "--editor", "--port", "0"],
        cwd=root,
        env=environment,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    assert process.stdout is not None and process.stdin is not None
    output: list[bytes] = []
    try:
        line = process.stdout.readline()  # blocks until the announcement, or EOF if it failed
        output.append(line)
        if not line:
            _, err = process.communicate(timeout=START_TIMEOUT_S)
            raise AssertionError(f"the dashboard did not start: {err.decode()}")
        announced = json.loads(line)
        found = URL_LINE.search(f"Consort dashboard: {announced['url']}")
        assert found is not None, announced
        reader = threading.Thread(
            target=_drain, args=(process.stdout.fileno(), output), daemon=True
        )
        reader.start()
        yield Dashboard(process, found.group(1), int(found.group(2)), announced["token"], output)
    finally:
        if process.poll() is None:
            with contextlib.suppress(BrokenPipeError):
                process.stdin.close()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=30)
