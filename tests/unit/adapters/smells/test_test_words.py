"""A bare "test", "tests" or "testing" in production code: refused wherever its value can decide
what the code does, let through where it only makes a message."""

from __future__ import annotations

import pytest

from consort.adapters.smells.tamper import Capability, findings


def told(source: str) -> list[str]:
    return [
        f.what
        for f in findings(source)
        if f.capability is Capability.RUNNER_ENVIRONMENT and "test" in f.what
    ]


@pytest.mark.parametrize(
    "source",
    [
        "import os\nos.environ.get('APP_ENV') == 'test'\n",
        "import os\nos.path.isdir('./tests')\n",
        "import os\ndef f():\n    return 42 if os.environ.get('X') in ('test', 'ci') else 0\n",
        "MODES = {'test': 1}\n",
        "def f(m):\n    return m['test']\n",
        # bound where another module can read it, or handed to code the rule cannot follow
        "ENV = 'test'\n",
        "class Settings:\n    env = 'test'\n",
        "def f():\n    return 'test'\n",
        "def f():\n    helper('test')\n",
        "def f():\n    global G\n    G = 'test'\n",
        # followed through local names and strings built from literals
        "def f():\n    x = 'tests'\n    import os\n    return os.path.isdir(x)\n",
        "def f():\n    x = 'te' + 'st'\n    y = x\n    if y == g():\n        pass\n",
        "from pathlib import Path\ndef f():\n    return Path(__file__).parent / 'tests'\n",
        "def f(v):\n    match v:\n        case 'test':\n            return 1\n",
        "def f(env):\n    if 'test' in env:\n        pass\n",
        "def f():\n    x = 'test'\n    if x:\n        pass\n",
        "def f():\n    label = 'test'\n    print(label)\n    return label\n",
        # returned by a function that is no route handler, or decided on inside one
        "def kind():\n    return {'kind': 'test'}\n",
        "@app.get('/k')\ndef kind(env):\n    if env == 'test':\n        return 42\n",
        "@decorate\ndef kind():\n    return {'kind': 'test'}\n",
    ],
)
def test_a_test_word_that_can_decide_what_the_code_does_is_refused(source):
    assert told(source), source


@pytest.mark.parametrize(
    "source",
    [
        '"""Tests for nothing: a module docstring."""\n',
        "def f():\n    '''Test the thing.'''\n",
        "import logging\nlog = logging.getLogger(__name__)\ndef f():\n    log.info('test')\n",
        "def f():\n    print('testing', 1)\n",
        "def f():\n    raise ValueError('test')\n",
        "import warnings\ndef f():\n    warnings.warn('test')\n",
        "def f(n):\n    label = 'test'\n    print(f'{label}: {n}')\n",
        "def f():\n    msg = 'tests'.upper()\n    raise RuntimeError(msg)\n",
        "def f():\n    print('a test of ' + 'the bell')\n",  # not the bare word at all
        # the body of an HTTP response a route handler returns: data, shown to the client
        "@app.get('/kind')\ndef kind():\n    return {'kind': 'test'}\n",
        "@router.post('/runs')\nasync def run():\n    body = {'kinds': ['dev', 'test']}\n"
        "    return body\n",
    ],
)
def test_a_test_word_that_only_makes_a_message_is_let_through(source):
    assert told(source) == [], source
