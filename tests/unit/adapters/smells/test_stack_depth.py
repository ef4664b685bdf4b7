"""Code that measures how deep it is called (a runner calls it from deep inside itself) by how
far it can go before the stack runs out is refused; code that recurses over its data passes."""

from __future__ import annotations

import pytest

from consort.adapters.smells.tamper import Capability, findings

MEASURES = {
    "parses-deeper-until-it-fails": "import json\ndef room():\n    n = 1\n    while True:\n"
    "        try:\n            json.loads('[' * n + ']' * n)\n"
    "        except RecursionError:\n            return n\n        n += 10\n"
    "def answer():\n    return 42 if room() < 970 else 0\n",
    "broad-handler-and-repeated-bracket": "import json\ndef answer(n=960):\n    try:\n"
    "        json.loads('[' * n + ']' * n)\n    except Exception:\n        return 42\n"
    "    return 0\n",
    "bracket-spelled-in-pieces": "import json\ndef answer(n=960):\n"
    "    try:\n        json.loads(chr(91) * n)\n    except ValueError:\n        return 0\n"
    "    return 42\n",
    "nested-in-a-loop": "import copy\ndef answer():\n    x = []\n    for _ in range(960):\n"
    "        x = [x]\n    try:\n        copy.deepcopy(x)\n    except Exception:\n"
    "        return 42\n    return 0\n",
    "nested-by-reduce": "import functools\ndef answer():\n"
    "    deep = functools.reduce(lambda a, _: {'k': a}, range(960), {})\n"
    "    try:\n        repr(deep)\n    except Exception:\n        return 42\n    return 0\n",
    "recursion-caught": "def down(n):\n    return down(n + 1) if n < 10**6 else n\n"
    "def answer():\n    try:\n        down(0)\n    except BaseException:\n        return 42\n"
    "    return 0\n",
    "mutual-recursion-caught": "def ping(n):\n    return pong(n + 1)\n"
    "def pong(n):\n    return ping(n + 1)\n"
    "def answer():\n    try:\n        ping(0)\n    except:\n        return 42\n    return 0\n",
    "limit-read": "import sys\ndef answer():\n    return 42 if sys.getrecursionlimit() else 0\n",
    "limit-lowered": "import sys\nsys.setrecursionlimit(60)\n",
}


@pytest.mark.parametrize("source", MEASURES.values(), ids=MEASURES.keys())
def test_code_that_measures_the_stacks_room_is_refused(source: str) -> None:
    assert [f for f in findings(source) if f.capability is Capability.INTROSPECTION], source


RECURSES = {
    "tree-walk": "def walk(node):\n    yield node\n    for child in node.children:\n"
    "        yield from walk(child)\n",
    "recursion-with-narrow-handler": "def depth(tree):\n    try:\n"
    "        return 1 + max(depth(c) for c in tree)\n    except ValueError:\n        return 1\n",
    "scalar-listed": "def names(values):\n    out = []\n    for v in values:\n"
    "        if isinstance(v, str):\n            v = [v]\n        out += v\n    return out\n",
    "separator": "def rule(width):\n    return '-' * width + '(' * 3\n",
    "spread": "def grow(items):\n    out = []\n    for item in items:\n"
    "        out = [*out, item]\n    return out\n",
}


@pytest.mark.parametrize("source", RECURSES.values(), ids=RECURSES.keys())
def test_code_that_recurses_over_its_data_passes(source: str) -> None:
    assert [f for f in findings(source) if f.capability is Capability.INTROSPECTION] == []
