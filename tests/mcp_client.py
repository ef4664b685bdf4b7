"""Talk to `consort mcp` the way a coding agent does: the MCP SDK's own client, over stdio, to
the real command started as a child process in a project."""

from __future__ import annotations

import concurrent.futures
import json
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError


@dataclass(frozen=True)
class ToolAnswer:
    name: str
    is_error: bool
    data: Any  # the structured result (None for an error)
    text: str  # every text block, joined

    def json(self) -> Any:
        assert not self.is_error, f"{self.name} failed: {self.text}"
        return self.data


@dataclass(frozen=True)
class Session:
    tools: list[str]
    answers: list[ToolAnswer]
    stderr: str  # what the server wrote to its stderr (its log)


def mcp_session(
    cwd: Path,
    calls: Sequence[tuple[str, Mapping[str, Any]]],
    *,
    env: Mapping[str, str] | None = None,
) -> Session:
    """Start `python -m consort mcp` in `cwd`, list its tools, make each call in order."""
    environment = {k: v for k, v in os.environ.items() if k != "CONSORT_TASK"}
    environment.update(env or {})
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "consort", "mcp"], cwd=str(cwd), env=environment
    )
    log = cwd.parent / f".mcp-stderr-{os.getpid()}.log"

    async def run() -> tuple[list[str], list[ToolAnswer]]:
        with log.open("w", encoding="utf-8") as errlog:
            async with Client(stdio_client(params, errlog=errlog)) as client:
                listed = await client.list_tools()
                answers = []
                for name, arguments in calls:
                    try:
                        result = await client.call_tool(name, dict(arguments))
                    except MCPError as exc:  # refused at the protocol level (an unknown tool)
                        answers.append(ToolAnswer(name, True, None, str(exc)))
                        continue
                    text = "\n".join(
                        block.text for block in result.content if getattr(block, "text", None)
                    )
                    data = result.structured_content
                    if data is None and not result.is_error and text:
                        data = json.loads(text)
                    answers.append(ToolAnswer(name, result.is_error, data, text))
                return [tool.name for tool in listed.tools], answers

    try:
        # its own thread: the caller's may run an event loop already (Playwright's does)
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            tools, answers = pool.submit(anyio.run, run).result()
        return Session(tools, answers, log.read_text(encoding="utf-8"))
    finally:
        log.unlink(missing_ok=True)
