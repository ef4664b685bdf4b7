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
