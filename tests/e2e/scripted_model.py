"""A scripted model server on 127.0.0.1 that the real agent CLIs talk to instead of a model.

It speaks the two wire protocols the CLIs use:

- Anthropic's Messages API (`POST /v1/messages`, `stream: true`), which Claude Code calls when
  `ANTHROPIC_BASE_URL` points here: answers are server-sent events (`message_start`,
  `content_block_start` / `content_block_delta` / `content_block_stop`, `message_delta`,
  `message_stop`), their content `text` and `tool_use` blocks;
- OpenAI's Responses API (`POST /v1/responses`), which Codex calls through a custom model
  provider: answers are `response.created`, one `response.output_item.done` per item (`message`,
  `function_call`, `custom_tool_call`), and `response.completed`.

What the "model" says is decided by a brain: a callable given the conversation so far (which
answer of its session this is, the prompt, the tool results the CLI sent back) that returns the
next answer in protocol-neutral terms: `Say` (text), `Call` (a tool with JSON arguments: Claude's
Write/Edit/Bash, Codex's exec_command/write_stdin), `Custom` (a free-form tool: Codex's
apply_patch) or `Fail` (an HTTP error). `Script` is the simplest brain: the same list of answers
for every session, one per request. Every request is kept in `requests` for the test to read.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Say:
    text: str


@dataclass(frozen=True)
class Call:
    name: str
    args: dict[str, Any]


@dataclass(frozen=True)
class Custom:
    name: str
    text: str


@dataclass(frozen=True)
class Fail:
    status: int
    message: str
    kind: str = "api_error"


Block = Say | Call | Custom
Answer = Sequence[Block] | Fail


@dataclass(frozen=True)
class ToolResult:
    call_id: str
    text: str
    is_error: bool


@dataclass(frozen=True)
class Conversation:
    """What the brain may look at: one request, in its session's order."""

    protocol: str  # "anthropic" / "openai"
    session: str
    index: int  # 0 for the session's first request
    prompt: str  # every user-side text of the request, joined
    system: str  # the system prompt / instructions / developer messages, joined
    tool_names: tuple[str, ...]
    results: tuple[ToolResult, ...]  # every tool result so far, oldest first
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def cwd(self) -> str | None:
        """The working folder the CLI says it runs in."""
        for text in (self.system, self.prompt):
            match = re.search(r"<cwd>([^<]+)</cwd>|Primary working directory: (\S+)", text)
            if match:
                return match.group(1) or match.group(2)
        return None

    @property
    def task_file(self) -> str | None:
        match = re.search(r"Task file: (\S+task\.json)", self.prompt)
        return None if match is None else match.group(1)


Brain = Callable[[Conversation], Answer]


@dataclass
class Script:
    """The same answers for every session, in order; after the last one, `Say("Done.")`."""

    answers: Sequence[Answer]
    final: str = "Done."

    def __call__(self, conversation: Conversation) -> Answer:
        if conversation.index < len(self.answers):
            return self.answers[conversation.index]
        return [Say(self.final)]


@dataclass
class ScriptedModel:
    brain: Brain
    requests: list[Conversation] = field(default_factory=list)
    _sessions: dict[str, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("the scripted model is not started")
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> ScriptedModel:
        model = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = {}
                path = self.path.split("?")[0]
                if path.endswith("/messages"):
                    status, headers, data = model._anthropic(body, dict(self.headers))
                elif path.endswith("/responses"):
                    status, headers, data = model._openai(body, dict(self.headers))
                else:
                    status, headers, data = 404, {"content-type": "application/json"}, b"{}"
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                self.send_response(404)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def __enter__(self) -> ScriptedModel:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def sessions(self) -> list[str]:
        return list(dict.fromkeys(c.session for c in self.requests))

    # ---- one request ---------------------------------------------------------------------------

    def _next(self, conversation_of: Callable[[int], Conversation], session: str) -> Conversation:
        with self._lock:
            index = self._sessions.get(session, 0)
            self._sessions[session] = index + 1
            conversation = conversation_of(index)
            self.requests.append(conversation)
        return conversation

    def _anthropic(
        self, body: dict[str, Any], headers: dict[str, str]
    ) -> tuple[int, dict[str, str], bytes]:
        session = _header(headers, "x-claude-code-session-id") or "anthropic"
        prompt, results = _anthropic_history(body.get("messages") or [])
        system = _texts(body.get("system")) + "\n" + _system_messages(body.get("messages") or [])
        tools = tuple(str(t.get("name")) for t in body.get("tools") or [] if isinstance(t, dict))
        conversation = self._next(
            lambda index: Conversation(
                "anthropic", session, index, prompt, system, tools, results, body, headers
            ),
            session,
        )
        answer = self.brain(conversation)
        if isinstance(answer, Fail):
            error = {"type": "error", "error": {"type": answer.kind, "message": answer.message}}
            return answer.status, {"content-type": "application/json"}, json.dumps(error).encode()
        return (
            200,
            {"content-type": "text/event-stream"},
            _anthropic_events(answer, str(body.get("model") or "claude"), conversation.index),
        )

    def _openai(
        self, body: dict[str, Any], headers: dict[str, str]
    ) -> tuple[int, dict[str, str], bytes]:
        session = str(
            body.get("prompt_cache_key")
            or _header(headers, "session_id")
            or _header(headers, "conversation_id")
            or "openai"
        )
        prompt, system, results = _openai_history(body)
        system = "\n".join(filter(None, [str(body.get("instructions") or ""), system]))
        tools = tuple(
            str(t.get("name") or t.get("type"))
            for t in body.get("tools") or []
            if isinstance(t, dict)
        )
        conversation = self._next(
            lambda index: Conversation(
                "openai", session, index, prompt, system, tools, results, body
            ),
            session,
        )
        answer = self.brain(conversation)
        if isinstance(answer, Fail):
            error = {"error": {"type": answer.kind, "message": answer.message, "code": None}}
            return answer.status, {"content-type": "application/json"}, json.dumps(error).encode()
        return (
            200,
            {"content-type": "text/event-stream"},
            _openai_events(answer, conversation.index),
        )


# ---- Anthropic ---------------------------------------------------------------------------------


def _anthropic_history(messages: list[Any]) -> tuple[str, tuple[ToolResult, ...]]:
    prompt: list[str] = []
    results: list[ToolResult] = []
    for message in messages:
        if not isinstance(message, dict) or message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            prompt.append(content)
            continue
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text":
                prompt.append(str(block.get("text", "")))
            elif block.get("type") == "tool_result":
                results.append(
                    ToolResult(
                        str(block.get("tool_use_id")),
                        _texts(block.get("content")),
                        block.get("is_error") is True,
                    )
                )
    return "\n".join(prompt), tuple(results)


def _system_messages(messages: list[Any]) -> str:
    return "\n".join(
        _texts(m.get("content"))
        for m in messages
        if isinstance(m, dict) and m.get("role") == "system"
    )


def _anthropic_events(answer: Sequence[Block], model: str, index: int) -> bytes:
    events: list[dict[str, Any]] = [
        {
            "type": "message_start",
            "message": {
                "id": f"msg_{index:04d}",
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": 100, "output_tokens": 1},
            },
        }
    ]
    stop = "end_turn"
    for number, block in enumerate(answer):
        if isinstance(block, Say):
            start: dict[str, Any] = {"type": "text", "text": ""}
            delta: dict[str, Any] = {"type": "text_delta", "text": block.text}
        elif isinstance(block, Call):
            stop = "tool_use"
            start = {"type": "tool_use", "id": f"toolu_{index:03d}_{number}", "name": block.name}
            start["input"] = {}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block.args)}
        else:
            raise ValueError(f"Claude Code has no free-form tools: {block}")
        events += [
            {"type": "content_block_start", "index": number, "content_block": start},
            {"type": "content_block_delta", "index": number, "delta": delta},
            {"type": "content_block_stop", "index": number},
        ]
    events += [
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {"output_tokens": 20},
        },
        {"type": "message_stop"},
    ]
    return _sse(events)


# ---- OpenAI Responses --------------------------------------------------------------------------


def _openai_history(body: dict[str, Any]) -> tuple[str, str, tuple[ToolResult, ...]]:
    prompt: list[str] = []
    system: list[str] = []
    results: list[ToolResult] = []
    for item in body.get("input") or []:
        if not isinstance(item, dict):
            continue
        kind = item.get("type")
        if kind == "message" and item.get("role") == "user":
            prompt.append(_texts(item.get("content")))
        elif kind == "message" and item.get("role") in ("developer", "system"):
            system.append(_texts(item.get("content")))
        elif kind in ("function_call_output", "custom_tool_call_output"):
            output = item.get("output")
            text = output if isinstance(output, str) else _texts(output)
            results.append(ToolResult(str(item.get("call_id")), text, False))
    return "\n".join(prompt), "\n".join(system), tuple(results)


def _openai_events(answer: Sequence[Block], index: int) -> bytes:
    response_id = f"resp_{index:04d}"
    events: list[dict[str, Any]] = [{"type": "response.created", "response": {"id": response_id}}]
    for number, block in enumerate(answer):
        call_id = f"call_{index:03d}_{number}"
        if isinstance(block, Say):
            item: dict[str, Any] = {
                "type": "message",
                "role": "assistant",
                "id": f"msg_{index:03d}_{number}",
                "content": [{"type": "output_text", "text": block.text}],
            }
        elif isinstance(block, Call):
            item = {
                "type": "function_call",
                "id": f"fc_{index:03d}_{number}",
                "call_id": call_id,
                "name": block.name,
                "arguments": json.dumps(block.args),
            }
        else:
            item = {
                "type": "custom_tool_call",
                "id": f"ctc_{index:03d}_{number}",
                "call_id": call_id,
                "name": block.name,
                "input": block.text,
            }
        events.append({"type": "response.output_item.done", "output_index": number, "item": item})
    usage = {
        "input_tokens": 100,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 20,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 120,
    }
    events.append({"type": "response.completed", "response": {"id": response_id, "usage": usage}})
    return _sse(events)


# ---- shared ------------------------------------------------------------------------------------


def _sse(events: list[dict[str, Any]]) -> bytes:
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()


def _texts(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(block.get("text", ""))
            for block in content
            if isinstance(block, dict) and isinstance(block.get("text"), str)
        )
    return ""


def _header(headers: dict[str, str], name: str) -> str | None:
    for key, value in headers.items():
        if key.lower() == name:
            return value
    return None
