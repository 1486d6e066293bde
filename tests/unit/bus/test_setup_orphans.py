"""setup.py's clean-up after a build: compiled modules left behind by a move or a rename go."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[3]
SUFFIX = ".cpython-311-x86_64-linux-gnu.so"


def _setup_script() -> ModuleType:
    """setup.py imported as a module: its build runs only as __main__, so nothing is built."""
    spec = importlib.util.spec_from_file_location("robotlab_setup_script", ROOT / "setup.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _tree(root: Path, files: list[str]) -> None:
    for name in files:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")


def test_modules_whose_source_is_gone_or_that_are_not_listed_are_removed(tmp_path: Path) -> None:
    (tmp_path / "robotlab" / "bus").mkdir(parents=True)
    (tmp_path / "robotlab" / "bus" / "native.py").write_text(
        'MODULES = ("robotlab.bus.wire.protocol", "robotlab.broker.router")\n')
    kept = [f"robotlab/bus/wire/protocol{SUFFIX}", f"robotlab/bus/_native__mypyc{SUFFIX}",
            f"broker/router{SUFFIX}"]
    orphans = [f"robotlab/bus/wire/renamed{SUFFIX}",  # its source moved away
               f"robotlab/bus/member/link{SUFFIX}",  # its source is there, but not listed
               f"broker/gone{SUFFIX}"]
    _tree(tmp_path, [*kept, *orphans, "robotlab/bus/wire/protocol.py",
                     "robotlab/bus/member/link.py", "broker/router.py"])

    removed = _setup_script().remove_orphans(tmp_path)

    assert sorted(str(p.relative_to(tmp_path)) for p in removed) == sorted(orphans)
    assert [name for name in kept if not (tmp_path / name).exists()] == []
    assert [name for name in orphans if (tmp_path / name).exists()] == []
    # the sources themselves are never touched
    assert (tmp_path / "robotlab/bus/member/link.py").exists()

