"""The crash campaign's scripted project (bench/crash.py), for the tests that kill a drive or
its server at an exact step: one loader of the bench module, and the project it makes."""

from __future__ import annotations

import importlib.util
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[1] / "bench" / "crash.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("crash_campaign", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


campaign = _load()


@contextmanager
def campaign_project(base: Path, *, driver: str = "honest") -> Iterator[Path]:
    """The campaign's project under `base`, its cluster destroyed afterwards."""
    root = campaign.make_project(base, driver=driver)
    try:
        yield root
    finally:
        campaign.destroy(root)


def drive_interrupted_at_green(root: Path, interrupt: Callable[[], None]) -> str:
    """Drive `root` until its first GREEN run begins (the third run: baseline and RED come
    first), call `interrupt` while the run is held there, let it go on, and return what the
    drive printed; the drive must finish with exit 0."""
    marker = root.parent / "paused"
    drive = campaign.start_drive(
        root, {"CONSORT_CRASH_AT": "run.tests#3", "CONSORT_CRASH_FILE": str(marker)}
    )
    try:
        deadline = time.monotonic() + 600
        while not marker.exists():
            assert drive.poll() is None, drive.communicate()[0]
            assert time.monotonic() < deadline, "the run never started"
            time.sleep(0.05)
        interrupt()
        marker.unlink()
        out: str = drive.communicate(timeout=600)[0]
    finally:
        if drive.poll() is None:
            drive.kill()
            drive.communicate()
    assert drive.returncode == 0, out
    return out
