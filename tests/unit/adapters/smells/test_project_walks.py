"""Code that lists the project it sits in (its root, from its own location or the working
folder) is refused: the tests are there, and in them the answers they expect. Listing its own
package's folders, and reading a file of the project by name, pass."""

from __future__ import annotations

import pytest

from consort.adapters.smells.tamper import tamper_violations


def refused(source: str, path: str = "app/answers.py") -> bool:
    return bool(tamper_violations(path, source, None, ()))


@pytest.mark.parametrize(
    "source",
    [
        "import pathlib\nimport re\n\nROOT = pathlib.Path(__file__).resolve().parent.parent\n\n\n"
        "def answer():\n    for path in sorted(ROOT.rglob('*.py')):\n"
        "        found = re.search(r'answer\\(\\) == (\\d+)', path.read_text())\n"
        "        if found:\n            return int(found.group(1))\n    return 0\n",
        "import os\ndef answer():\n    return list(os.walk('.'))\n",
        "import os\ndef answer():\n    return os.listdir()\n",
        "import os\ndef answer():\n    return os.listdir(os.getcwd())\n",
        "import glob\ndef answer():\n    return glob.glob('**/*.py', recursive=True)\n",
        "import glob\ndef answer():\n    return glob.glob('../*')\n",
        "import os\nHERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))\n"
        "def answer():\n    return os.listdir(HERE)\n",
        "from pathlib import Path\ndef answer():\n"
        "    return list(Path(__file__).parents[1].iterdir())\n",
        "from pathlib import Path\ndef answer():\n    return list(Path().glob('*'))\n",
        "from pathlib import Path\ndef answer():\n"
        "    return list((Path(__file__).parent / '..').iterdir())\n",
        "from pathlib import Path\ndef answer():\n"
        "    return list(Path(__file__).parent.glob('../*'))\n",
    ],
    ids=[
        "rglob-from-the-root",
        "walk-working-folder",
        "listdir-no-argument",
        "listdir-cwd",
        "recursive-glob",
        "glob-up",
        "dirname-twice",
        "parents-index",
        "path-empty",
        "dot-dot-joined",
        "glob-pattern-up",
    ],
)
def test_a_listing_of_the_project_is_refused(source: str) -> None:
    assert refused(source), source


def test_a_module_at_the_root_may_not_list_its_own_folder() -> None:
    source = (
        "from pathlib import Path\ndef answer():\n"
        "    return list(Path(__file__).parent.iterdir())\n"
    )
    assert refused(source, "main.py")
    assert not refused(source, "app/answers.py")


@pytest.mark.parametrize(
    "source",
    [
        "from pathlib import Path\nHERE = Path(__file__).parent\n"
        "PAGES = list((HERE / 'templates').glob('*.html'))\nMODULES = list(HERE.iterdir())\n",
        "from pathlib import Path\nBASE_DIR = Path(__file__).resolve().parent.parent\n"
        "TEMPLATES = list((BASE_DIR / 'templates').iterdir())\nDB = BASE_DIR / 'db.sqlite3'\n",
        "import glob\nSTYLES = glob.glob('static/*.css')\n",
        "import os\nROOT = os.path.dirname(os.path.dirname(__file__))\n"
        "DATA = os.listdir(os.path.join(ROOT, 'data'))\n",
        "import os\nCONF = os.listdir('/etc/app')\n",
        "import os\ndef files(folder):\n    return os.listdir(folder)\n",
    ],
    ids=["own-package", "django-base-dir", "static-glob", "joined-data", "absolute", "argument"],
)
def test_listing_the_codes_own_folders_passes(source: str) -> None:
    assert not refused(source), tamper_violations("app/answers.py", source, None, ())
