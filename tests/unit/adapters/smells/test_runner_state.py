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


# What pytest's capture shows of the standard streams and descriptors: each question refused.
STREAM_QUESTIONS = {
    "stream-descriptor": "import sys\ndef answer():\n"
    "    return 42 if sys.stdout.fileno() != 1 else 0\n",
    "stream-isatty": "import sys\ndef answer():\n    return 0 if sys.stderr.isatty() else 42\n",
    "stream-name": "import sys\ndef answer():\n"
    "    return 42 if sys.stdout.name != '<stdout>' else 0\n",
    "stream-encoding": "from sys import stdout\ndef answer():\n"
    "    return 42 if stdout.errors == 'replace' else 0\n",
    "stream-buffer-raw": "import sys\ndef answer():\n"
    "    return 42 if sys.stdout.buffer.raw else 0\n",
    "stream-bound-then-asked": "import sys\nOUT = sys.stdout\nALSO = OUT\ndef answer():\n"
    "    return 42 if ALSO.seekable() else 0\n",
    "stream-repr": "import sys\ndef answer():\n    return 0 if 'std' in repr(sys.stdout) else 42\n",
    "stream-f-string": "import sys\ndef answer():\n"
    "    return 0 if 'std' in f'{sys.stdout}' else 42\n",
    "stream-percent": "import sys\ndef answer():\n"
    "    return 0 if 'std' in '%s' % sys.stdout else 42\n",
    "stream-getattr": "import sys\ndef answer():\n"
    "    return 42 if getattr(sys.stdin, 'readable')() is False else 0\n",
    "stream-spelled-getattr": "import sys\ndef answer():\n"
    "    return 42 if getattr(sys, 'std' + 'out').isatty() is False else 0\n",
    "stream-handed-to-own-function": "import sys\ndef ask(stream):\n    return stream.fileno()\n"
    "def answer():\n    return 42 if ask(sys.stdout) != 1 else 0\n",
    "stream-handed-on-twice": "import sys\ndef ask(s):\n    return s.fileno()\n"
    "def relay(out):\n    return ask(out)\n"
    "def answer():\n    return 42 if relay(sys.stdout) else 0\n",
    "descriptor-fstat": "import os, stat\ndef answer():\n"
    "    return 42 if stat.S_ISREG(os.fstat(1).st_mode) else 0\n",
    "descriptor-isatty": "import os\ndef answer():\n    return 0 if os.isatty(0) else 42\n",
    "descriptor-opened": "def answer():\n"
    "    return 42 if open(1, closefd=False).seekable() else 0\n",
    "descriptor-ioctl": "import fcntl, termios\ndef answer():\n"
    "    return 42 if fcntl.ioctl(2, termios.TIOCGWINSZ, b'0' * 8) else 0\n",
    "terminal-size": "import shutil\ndef answer():\n"
    "    return 42 if shutil.get_terminal_size().columns == 80 else 0\n",
    "stdin-refused": "import sys\ndef answer():\n    try:\n        sys.stdin.read(0)\n"
    "    except OSError:\n        return 42\n    return 0\n",
    "input-refused": "def answer():\n    try:\n        input()\n    except Exception:\n"
    "        return 42\n    return 0\n",
    "stdin-iterated-bare-except": "import sys\ndef answer():\n    try:\n"
    "        for _ in sys.stdin:\n            break\n"
    "    except:\n        return 42\n    return 0\n",
    "stdin-suppressed": "import contextlib, sys\ndef answer():\n    seen = None\n"
    "    with contextlib.suppress(OSError):\n        seen = sys.stdin.readline()\n"
    "    return 42 if seen is None else 0\n",
    "stdin-read-by-own-function": "import sys\ndef probe():\n    return sys.stdin.read(0)\n"
    "def answer():\n    try:\n        probe()\n"
    "    except OSError:\n        return 42\n    return 0\n",
    "stdin-read-in-a-thread": "import sys, threading\nBOX = []\n"
    "def probe():\n    BOX.append(sys.stdin.read(0))\n"
    "def answer():\n    t = threading.Thread(target=probe)\n    t.start()\n    t.join()\n"
    "    return 0 if BOX else 42\n",
    "stdin-method-handed-on": "import sys, concurrent.futures as cf\ndef answer():\n"
    "    with cf.ThreadPoolExecutor() as pool:\n"
    "        failed = pool.submit(sys.stdin.read, 0).exception()\n"
    "    return 42 if failed else 0\n",
    "stdin-read-in-a-lambda": "import sys, threading\nBOX = []\ndef answer():\n"
    "    t = threading.Thread(target=lambda: BOX.append(sys.stdin.read(0)))\n"
    "    t.start()\n    t.join()\n    return 0 if BOX else 42\n",
    "descriptor-zero-read-caught": "import os\ndef answer():\n    try:\n        os.read(0, 1)\n"
    "    except OSError:\n        return 42\n    return 0\n",
}


@pytest.mark.parametrize("source", STREAM_QUESTIONS.values(), ids=STREAM_QUESTIONS.keys())
def test_a_standard_stream_asked_beyond_its_use_is_refused(source: str) -> None:
    assert asks(source), source


@pytest.mark.parametrize("device", ["/dev/stdout", "/dev/stdin", "/dev/tty", "/dev/pts/0"])
def test_a_standard_streams_device_file_is_refused(device: str) -> None:
    source = f"import os\ndef answer():\n    return 42 if os.path.isfile({device!r}) else 0\n"
    assert [f for f in findings(source) if f.what.startswith("reads")], source


STREAM_USES = {
    "writes-in-a-try": "import sys\ndef main(data):\n    try:\n        sys.stdout.write(data)\n"
    "        sys.stdout.flush()\n        print(data, file=sys.stderr)\n"
    "    except Exception:\n        pass\n",
    "binary-write": "import sys\ndef main(data):\n    sys.stdout.buffer.write(data)\n",
    "reconfigured": "import sys\nsys.stdout.reconfigure(line_buffering=True)\n",
    "log-handler": "import logging, sys\nlogging.basicConfig(stream=sys.stdout)\n"
    "HANDLER = logging.StreamHandler(sys.stderr)\n",
    "reads-input": "import json, sys\ndef main():\n    for line in sys.stdin:\n"
    "        print(line)\n    return json.load(sys.stdin)\n",
    "input-until-eof": "def main():\n    lines = []\n    while True:\n        try:\n"
    "            lines.append(input())\n        except EOFError:\n            return lines\n",
    "broken-pipe": "import sys\ndef main(rows):\n    try:\n        for row in rows:\n"
    "            print(row)\n    except BrokenPipeError:\n        sys.stderr.close()\n",
    "other-descriptors": "import os\ndef main(path):\n    fd = os.open(path, os.O_RDONLY)\n"
    "    size = os.fstat(fd).st_size\n    os.close(fd)\n    return size, os.getsid(0)\n",
    "exits": "import os, sys\ndef main():\n    sys.exit(1)\n    os._exit(2)\n",
}


@pytest.mark.parametrize("source", STREAM_USES.values(), ids=STREAM_USES.keys())
def test_a_standard_stream_written_read_and_configured_passes(source: str) -> None:
    assert asks(source) == [], source


# The root logger's handlers reached through a named logger, and the descriptors a process
# holds found by trying numbers: pytest's capture holds copies of the standard ones and files
# of its own, and its handlers are on the root logger.
WAYS_ROUND = {
    "logger-parent": "import logging\ndef answer():\n"
    "    return 42 if logging.getLogger('app').parent.handlers else 0\n",
    "logger-root": "import logging\ndef answer():\n"
    "    return 42 if logging.getLogger('app').root.handlers else 0\n",
    "bound-logger-parent": "import logging\nlog = logging.getLogger(__name__)\ndef answer():\n"
    "    return 42 if log.parent.handlers else 0\n",
    "walked-up": "import logging\ndef answer():\n    log = logging.getLogger('a.b')\n"
    "    while log.parent:\n        log = log.parent\n    return 42 if log.handlers else 0\n",
    "handler-names": "import logging\ndef answer():\n"
    "    return 42 if logging.getHandlerNames() else 0\n",
    "descriptors-counted": "import os\ndef answer():\n    n = 0\n    for fd in range(3, 64):\n"
    "        try:\n            os.fstat(fd)\n            n += 1\n        except OSError:\n"
    "            pass\n    return 42 if n > 3 else 0\n",
    "descriptor-by-number": "import os\ndef answer():\n    try:\n        os.fstat(5)\n"
    "    except OSError:\n        return 0\n    return 42\n",
    "descriptors-closed-by-count": "import os\ndef answer():\n    fd, open_ = 3, 0\n"
    "    while fd < 64:\n        try:\n            os.close(fd)\n            open_ += 1\n"
    "        except OSError:\n            pass\n        fd += 1\n    return 42 if open_ else 0\n",
}


@pytest.mark.parametrize("source", WAYS_ROUND.values(), ids=WAYS_ROUND.keys())
def test_the_runners_marks_reached_another_way_are_refused(source: str) -> None:
    assert asks(source), source


HONEST_LOGGING_AND_FILES = {
    "own-logger-handlers": "import logging\nlog = logging.getLogger(__name__)\n"
    "if not log.handlers:\n    log.addHandler(logging.StreamHandler())\n",
    "parent-folder": "from pathlib import Path\nHERE = Path(__file__).parent\n"
    "def load():\n    return (HERE / 'data.json').read_text()\n",
    "files-in-a-loop": "import os\ndef sizes(paths):\n    out = []\n    for path in paths:\n"
    "        out.append(os.stat(path).st_size)\n    return out\n",
    "name-grown": "import os\ndef write(name):\n    name += '.txt'\n"
    "    with open(name, 'w') as f:\n        f.write('x')\n",
    "opened-descriptor": "import os\ndef size(path):\n    fd = os.open(path, os.O_RDONLY)\n"
    "    try:\n        return os.fstat(fd).st_size\n    finally:\n        os.close(fd)\n",
}


@pytest.mark.parametrize(
    "source", HONEST_LOGGING_AND_FILES.values(), ids=HONEST_LOGGING_AND_FILES.keys()
)
def test_loggers_folders_and_opened_descriptors_pass(source: str) -> None:
    assert asks(source) == [], source
