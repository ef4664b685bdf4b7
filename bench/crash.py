"""Crash campaign: `kill -9` during a whole build, then a plain `consort drive` must finish it.

    python bench/crash.py                          # 3 random trials, seed 1
    python bench/crash.py --trials 20 --seed 7     # random kills: the drive, its process group,
                                                   # the PostgreSQL server, or both
    python bench/crash.py --at promote.delete --at run.tests:server
                                                   # a kill exactly when a step begins
    python bench/crash.py --at run.tests#3:server  # the third run's tests (T1's GREEN)
    python bench/crash.py --list                   # the steps `--at` knows

Each trial builds the same small scripted project from nothing (`consort init`, proxy gates,
the build-lane test agents of tests/agents/tdd_agent.py: one feature, one story, two TDD cycles,
deploy with the app started and smoke-tested, promote), kills what the trial aims at, and then
resumes with `consort drive` alone (a few times at most: a kill of the server alone may let the
drive go on, or stop it with an error that the next drive repairs). Then it checks the project
against an uninterrupted run of the same project measured first, in the same run:

* `consort verify` passes;
* the same commits on `main` (by subject, in order) and the same ledger outcomes (every accepted
  artifact, verified step, merge, deploy proof and promotion, in order), with no failed step the
  uninterrupted run did not have (a crash is never blamed on an agent);
* nothing left: no database or role but `main`'s, no process of the project's, no `index.lock`,
  no worktree but the main checkout.

`--at STEP[:TARGET]` sets CONSORT_CRASH_AT (see src/consort/core/crashpoint.py): the drive
pauses when STEP begins, the campaign kills TARGET (drive, group, server or both; default
drive), and lets a surviving drive go on. Random trials kill after a delay drawn from the
uninterrupted run's duration. Prints one line per trial and a summary; exits 1 when a trial
needed a person or left something behind, 0 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
AGENT = REPO / "tests" / "agents" / "tdd_agent.py"
FIXTURES = REPO / "tests" / "fixtures" / "mini"
TARGETS = ("drive", "group", "server", "both")
MAX_RESUMES = 4
DRIVE_TIMEOUT_S = 900.0
KEPT_EVENTS = (
    "artifact.accepted",
    "gate.approved",
    "branch.created",
    "red.verified",
    "green.verified",
    "refactor.verified",
    "story.merged",
    "deploy.verified",
    "feature.promoted",
)
FAILED_EVENTS = ("red.failed", "green.failed", "refactor.failed", "deploy.failed", "turn.failed")


# ---- the scripted project -------------------------------------------------------------------


def _agent(mode: str = "honest") -> str:
    return json.dumps([sys.executable, str(AGENT), str(FIXTURES), mode])


def config_text(driver: str = "honest") -> str:
    python = json.dumps(sys.executable)
    return f"""
[test]
command = [{python}, "-m", "pytest", "-q"]
[migrate]
command = []
[gates]
mode = "proxy"
[build]
repair_attempts = 1
[turns]
retries = 1
[deploy]
command = [{python}, "-m", "app.server", "{{port}}"]
smoke = ["/health"]
[agents]
default = "command"
command = {_agent()}
[agents.driver]
adapter = "command"
command = {_agent(driver)}
"""


SERVER = '''"""The app the deploy lane starts: answers GET /health."""

import sys
from http.server import BaseHTTPRequestHandler, HTTPServer


class Health(BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/health" else 404)
        self.end_headers()
        self.wfile.write(b"ok")


HTTPServer(("127.0.0.1", int(sys.argv[1])), Health).serve_forever()
'''


# Every run reaches its database: a run on a server that went away fails.
DATABASE_TEST = """import os

import psycopg


def test_the_database_answers():
    with psycopg.connect(os.environ["DATABASE_URL"]) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)
"""


def consort(
    *args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "COLUMNS": "200", **(env or {})}
    for name in ("CONSORT_CRASH_AT", "CONSORT_CRASH_FILE"):
        if env is None or name not in env:
            environment.pop(name, None)
    return subprocess.run(
        [sys.executable, "-m", "consort", *args],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        stdin=subprocess.DEVNULL,
    )


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, capture_output=True, text=True, check=True
    ).stdout.strip()


def make_project(base: Path, *, driver: str = "honest") -> Path:
    """The scripted project, committed, its feature taken in; `driver`: the driver's mode in
    tests/agents/tdd_agent.py."""
    root = base / "counter"
    made = consort("init", str(root), cwd=base)
    if made.returncode != 0:
        raise RuntimeError(f"consort init failed: {made.stdout}{made.stderr}")
    (root / "consort.toml").write_text(config_text(driver))
    (root / "tests").mkdir(exist_ok=True)
    (root / "tests" / "test_database.py").write_text(DATABASE_TEST)
    (root / "app").mkdir(exist_ok=True)
    (root / "app" / "__init__.py").write_text("")
    (root / "app" / "server.py").write_text(SERVER)
    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "configure")
    intake = subprocess.run(
        [sys.executable, "-m", "consort", "intake", "feature", "--title", "Counter"],
        cwd=root,
        input="A counter.",
        capture_output=True,
        text=True,
        check=False,
    )
    if intake.returncode != 0:
        raise RuntimeError(f"consort intake failed: {intake.stdout}{intake.stderr}")
    return root


def destroy(root: Path) -> None:
    """Stop the project's server and remove its cluster and folder."""
    consort("db", "stop", cwd=root)
    record = root / ".consort" / "db" / "cluster.json"
    try:
        home = json.loads(record.read_text())["home"]
        shutil.rmtree(home, ignore_errors=True)
    except (OSError, ValueError, KeyError):
        pass
    shutil.rmtree(root.parent, ignore_errors=True)


@contextmanager
def project(prefix: str) -> Iterator[Path]:
    base = Path(tempfile.mkdtemp(prefix=prefix))
    root = make_project(base)
    try:
        yield root
    finally:
        destroy(root)


# ---- what a run leaves ----------------------------------------------------------------------


@dataclass
class Outcome:
    commits: list[str]
    events: list[tuple[str, str]]
    failures: list[str]
    verify: int
    leftovers: list[str] = field(default_factory=list)


def events(root: Path) -> list[dict[str, object]]:
    path = root / ".consort" / "ledger.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def server_pid(root: Path) -> int | None:
    try:
        home = Path(json.loads((root / ".consort/db/cluster.json").read_text())["home"])
        return int((home / "data" / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, KeyError, IndexError):
        return None


def leftovers(root: Path) -> list[str]:
    """Whatever a finished project should not hold: databases and roles of branches or runs,
    processes of its drive, git locks, worktrees."""
    import psycopg

    found = []
    url = consort("db", "url", "main", cwd=root).stdout.strip()
    with psycopg.connect(url, autocommit=True) as conn:
        databases = [
            str(row[0])
            for row in conn.execute(
                "SELECT datname FROM pg_database WHERE datname NOT IN "
                "('postgres', 'template0', 'template1') ORDER BY 1"
            )
        ]
        roles = [
            str(row[0])
            for row in conn.execute(
                "SELECT rolname FROM pg_roles WHERE rolname NOT LIKE 'pg\\_%' "
                "AND rolname <> 'consort_admin' ORDER BY 1"
            )
        ]
        main = conn.execute("SELECT current_database(), current_user").fetchone()
    main_db, main_role = (str(main[0]), str(main[1])) if main else ("", "")
    found += [f"database {name}" for name in databases if name != main_db]
    found += [f"role {name}" for name in roles if name != main_role]
    from consort.adapters import proc

    found += [f"process {o.describe()}" for o in proc.orphans_of(root / ".consort")]
    found += [
        f"lock {path.relative_to(root)}"
        for path in [*(root / ".git").rglob("*.lock")]
        if path.name.endswith(".lock")
    ]
    worktrees = [
        line.split(" ", 1)[1]
        for line in git(root, "worktree", "list", "--porcelain").splitlines()
        if line.startswith("worktree ")
    ]
    found += [f"worktree {w}" for w in worktrees if Path(w).resolve() != root.resolve()]
    checkouts = root / ".consort" / "worktrees"
    if checkouts.is_dir():
        found += [f"folder {p.relative_to(root)}" for p in sorted(checkouts.glob("*/*"))]
    found += [f"branch {b}" for b in git(root, "branch", "--format=%(refname:short)").split()]
    return [item for item in found if item != "branch main"]


def outcome(root: Path) -> Outcome:
    ledger = events(root)
    return Outcome(
        commits=git(root, "log", "--format=%s", "main").splitlines(),
        events=[(str(e["type"]), str(e["subject"])) for e in ledger if e["type"] in KEPT_EVENTS],
        failures=[str(e["type"]) for e in ledger if e["type"] in FAILED_EVENTS],
        verify=consort("verify", cwd=root).returncode,
        leftovers=leftovers(root),
    )


def differences(got: Outcome, want: Outcome) -> list[str]:
    problems = []
    if got.verify != 0:
        problems.append(f"verify exited {got.verify}")
    if got.commits != want.commits:
        problems.append(f"commits differ: {got.commits} != {want.commits}")
    if got.events != want.events:
        problems.append("ledger outcomes differ: " + _first_difference(got.events, want.events))
    if sorted(got.failures) != sorted(want.failures):
        problems.append(f"failed steps {got.failures} (uninterrupted: {want.failures})")
    problems += [f"left: {item}" for item in got.leftovers]
    return problems


def _first_difference(got: list[tuple[str, str]], want: list[tuple[str, str]]) -> str:
    for index, (a, b) in enumerate(zip(got, want, strict=False)):
        if a != b:
            return f"at {index}: {a} != {b}"
    return f"{len(got)} events, uninterrupted {len(want)}"


# ---- kills ----------------------------------------------------------------------------------


def start_drive(root: Path, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    environment = {**os.environ, "COLUMNS": "200", **(env or {})}
    if env is None:
        environment.pop("CONSORT_CRASH_AT", None)
        environment.pop("CONSORT_CRASH_FILE", None)
    return subprocess.Popen(
        [sys.executable, "-m", "consort", "drive"],
        cwd=root,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        stdin=subprocess.DEVNULL,
        start_new_session=True,  # its own process group, as a terminal's job would be
    )


def kill(root: Path, drive: subprocess.Popen[str], target: str) -> None:
    if target in ("server", "both"):
        pid = server_pid(root)
        if pid is not None:
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    if target == "drive":
        drive.send_signal(signal.SIGKILL)
    elif target in ("group", "both"):
        with suppress(ProcessLookupError):
            os.killpg(drive.pid, signal.SIGKILL)


@dataclass
class Trial:
    name: str
    fired: bool = False
    resumes: int = 0
    exits: list[int] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.problems


def run_trial(trial: Trial, *, at: str | None, target: str, delay: float, want: Outcome) -> None:
    started = time.monotonic()
    with project("consort-crash-") as root:
        marker = root.parent / "crash-at"
        env = {"CONSORT_CRASH_AT": at, "CONSORT_CRASH_FILE": str(marker)} if at else None
        drive = start_drive(root, env)
        deadline = time.monotonic() + DRIVE_TIMEOUT_S
        if at is not None:
            while drive.poll() is None and not marker.exists() and time.monotonic() < deadline:
                time.sleep(0.02)
            if marker.exists():
                kill(root, drive, target)
                trial.fired = True
                marker.unlink()
        else:
            try:
                drive.wait(timeout=delay)
            except subprocess.TimeoutExpired:
                kill(root, drive, target)
                trial.fired = True
        drive.communicate(timeout=DRIVE_TIMEOUT_S)
        trial.exits.append(drive.returncode)
        code = drive.returncode
        last = ""
        while code != 0 and trial.resumes < MAX_RESUMES:
            trial.resumes += 1
            resumed = consort("drive", cwd=root, timeout=DRIVE_TIMEOUT_S)
            code = resumed.returncode
            trial.exits.append(code)
            last = (resumed.stdout + resumed.stderr).strip()[-600:]
        if code != 0:
            trial.problems.append(f"drive still fails after {trial.resumes} resumes: {last}")
        else:
            trial.problems += differences(outcome(root), want)
    trial.seconds = time.monotonic() - started


def baseline() -> tuple[Outcome, float]:
    with project("consort-crash-baseline-") as root:
        started = time.monotonic()
        done = consort("drive", cwd=root, timeout=DRIVE_TIMEOUT_S)
        seconds = time.monotonic() - started
        if done.returncode != 0:
            raise RuntimeError(f"the uninterrupted drive failed: {done.stdout}{done.stderr}")
        return outcome(root), seconds


def parse_at(text: str) -> tuple[str, str]:
    """STEP[#N][:TARGET] -> (STEP[#N], TARGET)."""
    step, _, target = text.partition(":")
    return step, target or "drive"


def main(argv: list[str] | None = None) -> int:
    from consort.core.crashpoint import POINTS

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--trials", type=int, default=None, help="random kills (default 3, or 0 with --at)"
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--at",
        action="append",
        default=[],
        metavar="STEP[:TARGET]",
        help="kill when STEP begins (no random trials unless --trials is given too)",
    )
    parser.add_argument("--list", action="store_true", help="list the steps and exit")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    args = parser.parse_args(argv)
    if args.list:
        for name, what in POINTS.items():
            print(f"{name:18} {what}")
        return 0
    planned: list[tuple[str | None, str]] = []
    for text in args.at:
        step, target = parse_at(text)
        if step.partition("#")[0] not in POINTS or target not in TARGETS:
            parser.error(f"--at {text}: steps are {', '.join(POINTS)}; targets {TARGETS}")
        planned.append((step, target))
    random_trials = args.trials if args.trials is not None else (0 if planned else 3)

    want, seconds = baseline()
    print(
        f"uninterrupted: {seconds:.1f} s, {len(want.commits)} commits on main, "
        f"{len(want.events)} ledger outcomes, verify exit {want.verify}",
        file=sys.stderr,
        flush=True,
    )
    rng = random.Random(args.seed)  # noqa: S311 -- reproducible kill times, not secrets
    trials: list[Trial] = []
    for step, target in planned:
        trial = Trial(f"at {step}: kill {target}")
        run_trial(trial, at=step, target=target, delay=0.0, want=want)
        if not trial.fired:
            trial.problems.append(f"the step {step} was never reached")
        trials.append(trial)
        _say(trial)
    for number in range(random_trials):
        target = rng.choice(TARGETS)
        delay = rng.uniform(0.5, seconds)
        trial = Trial(f"random {number + 1}: kill {target} at {delay:.1f} s")
        run_trial(trial, at=None, target=target, delay=delay, want=want)
        trials.append(trial)
        _say(trial)

    needed = [t for t in trials if not t.ok]
    summary = {
        "trials": len(trials),
        "kills": sum(1 for t in trials if t.fired),
        "finished by drive alone": sum(1 for t in trials if t.ok),
        "needed a person or left something": len(needed),
        "resumes": sum(t.resumes for t in trials),
        "uninterrupted seconds": round(seconds, 1),
        "seed": args.seed,
    }
    if args.json:
        print(
            json.dumps(
                {
                    **summary,
                    "failures": {t.name: t.problems for t in needed},
                }
            )
        )
    else:
        print()
        for key, value in summary.items():
            print(f"{key}: {value}")
        for t in needed:
            print(f"  {t.name}: " + "; ".join(t.problems)[:1000])
    return 1 if needed else 0


def _say(trial: Trial) -> None:
    verdict = "ok" if trial.ok else "NOT FINISHED CLEANLY: " + "; ".join(trial.problems)[:600]
    print(
        f"{trial.name}: exits {trial.exits}, {trial.seconds:.0f} s: {verdict}",
        file=sys.stderr,
        flush=True,
    )


if __name__ == "__main__":
    sys.exit(main())
