"""The MCP server: one tool per question the user's coding agent may ask Consort.

Every tool is a thin call into the command API (`consort.app`), returning the same JSON as the
command's `--json`. Consort's errors become tool errors carrying the message and the fix. No tool
approves, rejects, retries or amends: those are a person's, at a terminal or on the dashboard.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from consort import __version__
from consort.app.errors import ConsortError, UsageError

T = TypeVar("T")

SERVER_NAME = "consort"
TASK_ENV = "CONSORT_TASK"  # set in every agent turn (the agent protocol)

INSTRUCTIONS = """\
Consort orchestrates spec-first TDD on paired git + PostgreSQL branches. Ask it what comes next
(next), where the work stands (status), what happened (log, cycle_evidence) and whether the
evidence holds (verify). Work on a branch of your own: branch_create makes a git branch with its
own database copied from its parent, and database_url gives that branch's own login. Approving
or rejecting a gate and amending a test are a person's decisions: tell the user the command.
"""

TOOL_NAMES = (
    "status",
    "next",
    "log",
    "verify",
    "branch_list",
    "branch_create",
    "branch_diff",
    "database_url",
    "schema",
    "cycle_evidence",
)


def refuse_in_agent_turn() -> None:
    """Role agents inside a turn get their task from task.json, and no Consort tools."""
    if os.environ.get(TASK_ENV):
        raise UsageError(
            "`consort mcp` serves the user's own coding agent, not a role agent inside a turn"
        )


def build_server(checkout: Path) -> MCPServer[Any]:
    """The server for the project at or above `checkout` (the folder the agent works in)."""
    from consort.app.project import Project, find_project

    checkout = checkout.resolve()
    find_project(checkout)  # fail at start-up, not at the first call, outside a project

    def project() -> Project:
        return find_project(checkout)  # read afresh: consort.toml may change while we serve

    server: MCPServer[Any] = MCPServer(
        SERVER_NAME,
        instructions=INSTRUCTIONS,
        version=__version__,
        log_level="WARNING",  # nothing of a call's arguments or results goes to the log
    )

    @server.tool()
    def status() -> dict[str, Any]:
        """Features with their lane and next step, stories with their cycles, open escalations
        (with the commands that resolve them), and the paired branches."""
        from consort.app.status import status as run

        return _answer(lambda: run(project()).as_json())

    @server.tool(name="next")
    def next_step(feature: str | None = None) -> dict[str, Any]:
        """What Consort does next and why, for the project or one feature (F1 or its full id)."""
        from consort.app.orchestrate import next_action

        return _answer(lambda: next_action(project(), feature).as_json())

    @server.tool()
    def log(
        feature: str | None = None,
        role: str | None = None,
        event_type: str | None = None,
        limit: int = 100,
    ) -> dict[str, Any]:
        """The ledger's events, oldest first: filter by feature (F1), role (driver), event type
        or family (gate, red.verified); the last `limit` that match."""
        from consort.app.log import LogFilter, read_log

        def run() -> dict[str, Any]:
            wanted = LogFilter(
                feature=feature, role=role, event_type=event_type, limit=max(limit, 0)
            )
            report = read_log(project(), wanted)
            return {
                "ok": report.ok,
                "problems": report.problems,
                "total": report.total,
                "events": report.as_json(),
            }

        return _answer(run)

    @server.tool()
    def verify() -> dict[str, Any]:
        """Re-prove everything: the ledger's hash chain, every gate's hashes, every turn output
        and every cycle's evidence. `ok` false lists what fails."""
        from consort.app.verify import verify as run

        return _answer(lambda: run(project()).as_json())

    @server.tool()
    def branch_list() -> dict[str, Any]:
        """The git branches and their databases: parent, pairing, size, the current one."""
        from consort.app.branch import list_rows

        return _answer(lambda: {"branches": [row.as_json() for row in list_rows(project())]})

    @server.tool()
    def branch_create(
        name: str, parent: str | None = None, snapshot: bool = False
    ) -> dict[str, Any]:
        """Create a paired branch: a git branch with its own database copied from its parent's
        (default: the checked-out branch). `snapshot` copies while the parent stays connected."""
        from consort.app.branch import TemplateMode, create

        mode = TemplateMode.SNAPSHOT if snapshot else TemplateMode.DISCONNECT
        return _answer(lambda: create(project(), name, parent, mode).as_json())

    @server.tool()
    def branch_diff(name: str, against: str | None = None) -> dict[str, Any]:
        """How branch NAME's database schema differs from its parent's (or `against`'s)."""
        from consort.app.branch import diff

        return _answer(lambda: diff(project(), name, against).as_json())

    @server.tool()
    def database_url(branch: str | None = None) -> dict[str, Any]:
        """The login URL of a branch's own database role: the checked-out branch (default) or a
        branch made from it. A parent's, a root branch's and the superuser's are never given."""
        from consort.app.reach import own_branch_login

        return _answer(lambda: own_branch_login(project(), checkout, branch).as_json())

    @server.tool()
    def schema(name: str) -> dict[str, Any]:
        """The JSON Schema an artifact must satisfy: feature-spec, architecture, db-design,
        test-list, ux, ..."""
        from consort.app.schema import schema as run

        return _answer(lambda: run(name))

    @server.tool()
    def cycle_evidence(cycle: str) -> dict[str, Any]:
        """The evidence of one build cycle, F1/S1/T1: its commits, each stage's record (the run,
        the counts, the database branch) and every ledger event about it."""
        from consort.app.evidence import cycle_evidence as run

        return _answer(lambda: run(project(), cycle).as_json())

    return server


def _answer(call: Callable[[], T]) -> T:
    """Run one tool's call; Consort's errors become a tool error with the message and the fix."""
    try:
        return call()
    except ConsortError as exc:
        text = exc.message + (f" (fix: {exc.fix})" if exc.fix else "")
        raise ToolError(text) from None


def serve(checkout: Path) -> None:
    """Serve the tools over stdin and stdout until the client closes them."""
    refuse_in_agent_turn()
    build_server(checkout).run("stdio")
