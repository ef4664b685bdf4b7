"""Code that asks what the test runner did to the interpreter (its capture of the standard
streams, its hooks, the root logger's handlers, its warning filters) or the sandbox to the
machine (loopback alone) is refused; code that writes to its streams, logs and sets hooks of
its own is let through."""

from __future__ import annotations

import pytest

from consort.adapters.smells.tamper import Capability, findings


def asks(source: str) -> list[str]:
    return [f.what for f in findings(source) if f.capability is Capability.RUNNER_STATE]


@pytest.mark.parametrize(
    "source",
    [
        "import sys\ndef answer():\n    return 42 if sys.stdout is not sys.__stdout__ else 0\n",
        "import io, sys\ndef answer():\n"
        "    return 42 if type(sys.stdout) is not io.TextIOWrapper else 0\n",
        "import sys\nOUT = sys.stderr\ndef answer():\n    return 42 if type(OUT).__name__ else 0\n",
        "import sys\ndef answer():\n    return 42 if sys.stdin.__class__.__module__ else 0\n",
        "import io, sys\ndef answer():\n"
        "    return 42 if isinstance(sys.stdin, io.StringIO) else 0\n",
        "import threading\ndef answer():\n"
        "    return 42 if threading.excepthook is not threading.__excepthook__ else 0\n",
        "import sys\ndef answer():\n    return 42 if sys.unraisablehook.__module__ else 0\n",
        "from sys import breakpointhook\ndef answer():\n    return 42 if breakpointhook else 0\n",
        "import logging\ndef answer():\n    return 42 if logging.getLogger().handlers else 0\n",
        "import logging\nROOT = logging.getLogger('')\ndef answer():\n"
        "    return 42 if len(ROOT.handlers) > 1 else 0\n",
        "import logging\ndef answer():\n    return 42 if logging.root.handlers else 0\n",
        "import logging\ndef answer():\n"
        "    return 42 if logging.getLogger('app').hasHandlers() else 0\n",
        "import logging\ndef answer():\n    return 42 if logging._handlerList else 0\n",
        "import warnings\ndef answer():\n    return 42 if len(warnings.filters) > 5 else 0\n",
        "import socket\ndef answer():\n    return 42 if len(socket.if_nameindex()) == 1 else 0\n",
        "import signal\ndef answer():\n    return 42 if signal.getsignal(2) else 0\n",
        "import sys\ndef answer():\n    return 42 if getattr(sys, '__std' + 'out__') else 0\n",
    ],
    ids=[
        "stdout-swapped",
        "stdout-type",
        "stderr-bound-then-typed",
        "stdin-class",
        "stdin-isinstance",
        "thread-hook",
        "unraisable-hook",
        "breakpoint-hook-imported",
        "root-handlers",
        "root-bound-by-name",
        "logging-root",
        "has-handlers",
        "logging-private",
        "warning-filters",
        "network-interfaces",
        "signal-handler",
        "spelled-through-getattr",
    ],
)
def test_a_question_about_the_runners_marks_is_refused(source: str) -> None:
    assert asks(source), source


@pytest.mark.parametrize(
    "source",
    [
        "import sys\ndef main():\n    sys.stdout.write('hi')\n    print('x', file=sys.stderr)\n"
        "    return sys.stdin.read()\n",
        "import logging\nlog = logging.getLogger(__name__)\nif not log.handlers:\n"
        "    log.addHandler(logging.StreamHandler())\n",
        "import logging\nlogging.basicConfig(level=logging.INFO)\n"
        "logging.getLogger().handlers = []\n",
        "import threading\ndef report(args):\n    pass\nthreading.excepthook = report\n",
        "import warnings\nwarnings.filterwarnings('ignore', category=DeprecationWarning)\n",
        "import socket\ndef connect(host):\n    return socket.create_connection((host, 80))\n",
    ],
    ids=[
        "writes-streams",
        "named-logger-handlers",
        "configures-root",
        "sets-own-hook",
        "adds-filter",
        "connects",
    ],
)
def test_code_that_uses_its_streams_loggers_and_hooks_passes(source: str) -> None:
    assert asks(source) == []
