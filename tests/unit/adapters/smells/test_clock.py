"""Code right on the day it runs: the clock compared with a fixed instant, or the day of the run
spelled in the code, refused; the time of day, durations and dates long past let through."""

from __future__ import annotations

import time
from datetime import date

import pytest

from consort.adapters.smells.tamper import Capability, findings

NOW = int(time.time())
TODAY = date.today()


def clocked(source: str) -> list[str]:
    return [f.what for f in findings(source) if f.capability is Capability.CLOCK]


@pytest.mark.parametrize(
    "source",
    [
        f"import time\ndef answer():\n    return 42 if time.time() < {NOW + 86400} else 0\n",
        "from datetime import date\ndef answer():\n"
        f"    return 42 if date.today() <= date({TODAY.year}, {TODAY.month}, {TODAY.day}) else 0\n",
        "import datetime\ndef answer():\n"
        "    return 42 if datetime.date.today() < datetime.date(2030, 1, 1) else 0\n",
        "from datetime import datetime\ndef f():\n    now = datetime.now()\n"
        "    if now.year == 2026:\n        return 1\n",
        f"TODAY = '{TODAY.isoformat()}'\n",
        f"from datetime import date\nTODAY = date({TODAY.year}, {TODAY.month}, {TODAY.day})\n",
        f"DEADLINE_MS = {NOW * 1000}\n",
    ],
    # ids that do not hold the time of collection: pytest-xdist's workers must collect the same
    ids=[
        "time-before-tomorrow",
        "date-until-today",
        "date-before-2030",
        "year-of-now",
        "today-string",
        "today-date",
        "deadline-ms",
    ],
)
def test_an_answer_that_depends_on_the_day_of_the_run_is_refused(source):
    assert clocked(source), source


@pytest.mark.parametrize(
    "source",
    [
        "from datetime import datetime\ndef greet():\n"
        "    return 'morning' if datetime.now().hour < 12 else 'day'\n",
        "import time\ndef late(t0):\n    return time.time() - t0 > 30\n",
        "RELEASED = '2019-05-01'\n",
        "from datetime import date\nEPOCH = date(2000, 1, 1)\n",
        "from datetime import UTC, datetime\n"
        "def stamp():\n    return datetime.now(UTC).isoformat()\n",
    ],
)
def test_the_time_of_day_durations_and_old_dates_are_let_through(source):
    assert clocked(source) == [], source


@pytest.mark.parametrize(
    "source",
    [
        # an instant computed from literals, through names bound once
        "import time\nSTART = 1_700_000_000\nDAY = 86400\n"
        f"DEADLINE = START + DAY * {(NOW + 86400 - 1_700_000_000) // 86400}\n"
        "def answer():\n    return 42 if time.time() < DEADLINE else 0\n",
        "from datetime import datetime, timedelta\ndef answer():\n"
        "    return 42 if datetime.now() < datetime(2020, 1, 1) + timedelta(days=3000) else 0\n",
        f"import time\ndef answer():\n    return 42 if time.time() < int('{NOW + 86400}') else 0\n",
        "from datetime import datetime\nEND = datetime(2030, 1, 1).timestamp()\n"
        "import time\ndef answer():\n    return 42 if time.time() < END else 0\n",
        # the clock against when the code's own files were written: an export is always new
        "import os, time\ndef answer():\n"
        "    return 42 if time.time() - os.path.getmtime(__file__) < 3600 else 0\n",
        "import time\nfrom pathlib import Path\nHERE = Path(__file__).parent\n"
        "def answer():\n    age = time.time() - HERE.stat().st_mtime\n"
        "    return 42 if age < 3600 else 0\n",
        "import os\ndef answer():\n"
        "    return 42 if os.stat(__file__).st_mtime > 1_700_000_000 else 0\n",
    ],
    ids=[
        "named-sum",
        "datetime-plus-timedelta",
        "int-of-a-string",
        "timestamp-of-a-datetime",
        "own-file-age",
        "own-folder-age",
        "own-file-after-an-instant",
    ],
)
def test_an_instant_computed_from_literals_or_the_age_of_its_own_files_is_refused(source):
    assert clocked(source), source


@pytest.mark.parametrize(
    "source",
    [
        "import time\nTTL = 3600\ndef stale(t):\n    return time.time() - t > TTL\n",
        "import time\nMINUTE = 60\ndef late(t0):\n    return time.time() - t0 > 5 * MINUTE\n",
        "from pathlib import Path\nSTATIC = Path(__file__).parent / 'static'\n"
        "def etag(name):\n    return str((STATIC / name).stat().st_mtime)\n",
        "import os, time\ndef stale(cache):\n"
        "    return time.time() - os.path.getmtime(cache) > 3600\n",
    ],
    ids=["ttl", "minutes", "static-file-etag", "cache-file-age"],
)
def test_durations_and_times_of_other_files_are_let_through(source):
    assert clocked(source) == [], source
