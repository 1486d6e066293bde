"""``import robotlab`` is cheap (PEP 562 lazy names), and every public name is what the docs say
whatever was imported first: ``robotlab.config`` and ``robotlab.hooks`` are functions even though
``robotlab/config/`` and ``robotlab/hooks/`` are subpackages of the same names.

Each check runs in a fresh interpreter, because this one has long imported everything.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("litellm", "pydantic", "pydantic_settings", "jinja2", "zmq")

# Prints what the names are after the imports the test puts in front of it.
REPORT = """
import json, types, robotlab
names = {name: getattr(robotlab, name) for name in robotlab.__all__}
print(json.dumps({
    "config": [callable(robotlab.config), isinstance(robotlab.config, types.ModuleType)],
    "hooks": [callable(robotlab.hooks), isinstance(robotlab.hooks, types.ModuleType)],
    "model": robotlab.config().ruby_llm.model,
    "hook_list": robotlab.hooks(),
    "modules": sorted(n for n, v in names.items() if isinstance(v, types.ModuleType)),
    "missing": sorted(set(robotlab.__all__) - set(dir(robotlab))),
}))
"""


def _python(code: str) -> dict:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_importing_robotlab_loads_no_heavy_dependency() -> None:
    loaded = _python(f"import json, sys, robotlab\nprint(json.dumps([m for m in {HEAVY!r} if m in "
                     "sys.modules]))")
    assert loaded == []


def test_a_public_name_loads_its_module_on_first_use() -> None:
    loaded = _python(
        "import json, sys, robotlab\nrobotlab.Robot\nprint(json.dumps('pydantic' in sys.modules))")
    assert loaded is True


@pytest.mark.parametrize("first", [
    "",
    "import robotlab.config.settings, robotlab.config.run_config",
    "import robotlab.hooks.narrator\nfrom robotlab.hooks import Narrator",
    "from robotlab.config import RunConfig, Settings\nimport robotlab.config.cascade",
    "import robotlab\nrobotlab.Robot\nimport robotlab.config.settings\nimport robotlab.hooks.hooks",
    "import robotlab.robot.robot, robotlab.to, robotlab.bus",
])
def test_config_and_hooks_are_the_functions_after_any_import_order(first: str) -> None:
    report = _python(first + "\n" + REPORT)
    assert report["config"] == [True, False]
    assert report["hooks"] == [True, False]
    assert report["model"]
    assert report["hook_list"] == []
    assert report["modules"] == [], "public names that are modules, not what the docs say"
    assert report["missing"] == []


def test_an_unknown_name_is_an_attribute_error() -> None:
    import robotlab

    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        robotlab.nope  # noqa: B018
