"""How live the dashboard is: a ledger append's delay to the open page, and the first load.

    python bench/dashboard.py [--appends N] [--loads N] [--project DIR]

Builds the StockFlow demo once in a temporary folder (`consort demo`; every lane driven, so the
page shows a finished feature), or copies the project given with `--project` (it is left alone:
the appends go to the copy's ledger). Starts `consort dashboard` on 127.0.0.1 and opens it in the
distribution's Chromium through Playwright (`CONSORT_CHROMIUM` names another executable).

* **append to page**: a ledger event appended through Consort's own ledger writer, until its
  line is on the open page (the server-sent event arrived and was drawn), timed from Python.
  Baseline, measured in the same run: the same wait for a line the page itself adds (the
  browser round trip and Playwright's wait, without the server). Goal: median <= 0.5 s.
* **first load**: a fresh tab until the overview is drawn (`body[data-loaded]`). Baseline: a
  fresh tab loading the page's stylesheet alone. Goal: median <= 1 s.

Prints medians with [min-max], the ratio to the baseline and whether the goal holds; the header
prints the load average. Exit 0 whenever it could measure.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

APPEND_GOAL_S = 0.5
LOAD_GOAL_S = 1.0
WAIT_MS = 60_000
CONSORT = [sys.executable, "-m", "consort"]


def build_demo(base: Path) -> Path:
    root = base / "stockflow"
    print(f"building the StockFlow demo in {root} ...", file=sys.stderr)
    subprocess.run([*CONSORT, "demo", str(root)], check=True, capture_output=True)
    return root


def start_dashboard(root: Path) -> tuple[subprocess.Popen[str], str]:
    child = subprocess.Popen(
        [*CONSORT, "dashboard", "--port", "0"],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    assert child.stdout is not None
    for line in child.stdout:
        found = re.search(r"(http://127\.0\.0\.1:\d+/)", line)
        if found:
            return child, found.group(1)
    raise RuntimeError("the dashboard did not start")


def append_event(root: Path) -> int:
    from consort.core.ledger import Actor, Ledger, ledger_path
    from consort.core.ledger.events import DriveStopped

    ledger = Ledger.open_for_writing(ledger_path(root / ".consort"))
    return ledger.record(DriveStopped(reason="bench"), Actor.ORCHESTRATOR, "project").seq


def summary(values: list[float]) -> str:
    return f"{statistics.median(values):.3f} s [{min(values):.3f}-{max(values):.3f}]"


def measure_loads(browser: object, url: str, runs: int) -> tuple[list[float], list[float]]:
    loads: list[float] = []
    baseline: list[float] = []
    for _ in range(runs):
        for target, into in ((url + "static/style.css", baseline), (url, loads)):
            tab = browser.new_page()  # type: ignore[attr-defined]
            started = time.perf_counter()
            tab.goto(target)
            if target == url:
                tab.wait_for_selector("body[data-loaded]", timeout=WAIT_MS)
            into.append(time.perf_counter() - started)
            tab.close()
    return loads, baseline


def measure_appends(
    browser: object, url: str, root: Path, runs: int
) -> tuple[list[float], list[float]]:
    tab = browser.new_page()  # type: ignore[attr-defined]
    tab.goto(url)
    tab.wait_for_selector("#live.ok", timeout=WAIT_MS)
    appends: list[float] = []
    baseline: list[float] = []
    for n in range(runs):
        started = time.perf_counter()
        tab.evaluate(
            "n => { const li = document.createElement('li');"
            " li.dataset.bench = n; document.getElementById('events').prepend(li); }",
            n,
        )
        tab.wait_for_selector(f'li[data-bench="{n}"]', timeout=WAIT_MS)
        baseline.append(time.perf_counter() - started)
        started = time.perf_counter()
        seq = append_event(root)
        tab.wait_for_selector(f'#events li[data-seq="{seq}"]', timeout=WAIT_MS)
        appends.append(time.perf_counter() - started)
        time.sleep(0.2)  # let the page's overview refresh settle between appends
    tab.close()
    return appends, baseline


def destroy_cluster(root: Path) -> None:
    import json

    subprocess.run([*CONSORT, "db", "stop"], cwd=root, capture_output=True, check=False)
    record = root / ".consort" / "db" / "cluster.json"
    if record.is_file():
        shutil.rmtree(json.loads(record.read_text())["home"], ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--appends", type=int, default=20)
    parser.add_argument("--loads", type=int, default=10)
    parser.add_argument("--project", type=Path)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    executable = os.environ.get("CONSORT_CHROMIUM") or shutil.which("chromium")
    if executable is None:
        sys.exit("no Chromium: apt-get install chromium")
    with tempfile.TemporaryDirectory() as base:
        if args.project:  # a copy shares the original's server: leave that running
            root = Path(base) / "copy"
            shutil.copytree(args.project, root, symlinks=True)
        else:
            root = build_demo(Path(base))
        child, url = start_dashboard(root)
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(
                    executable_path=executable, args=["--no-sandbox"]
                )
                loads, load_base = measure_loads(browser, url, args.loads)
                appends, append_base = measure_appends(browser, url, root, args.appends)
                browser.close()
        finally:
            os.killpg(child.pid, signal.SIGINT)
            child.wait(timeout=30)
            if not args.project:
                destroy_cluster(root)
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"dashboard liveness (load average {load}; {args.appends} appends, {args.loads} loads)")
    rows = [
        ("append to page", appends, append_base, APPEND_GOAL_S),
        ("first load", loads, load_base, LOAD_GOAL_S),
    ]
    print(f"{'measure':<16} {'value':<26} {'baseline':<26} {'ratio':>6}  goal")
    for name, values, baseline, goal in rows:
        ratio = statistics.median(values) / statistics.median(baseline)
        holds = "holds" if statistics.median(values) <= goal else "MISSED"
        print(
            f"{name:<16} {summary(values):<26} {summary(baseline):<26} {ratio:>6.1f}  "
            f"<= {goal} s: {holds}"
        )


if __name__ == "__main__":
    main()
