"""Builds the bus's hot path with mypyc (robotlab/bus/native.py); everything else is in
pyproject.toml.

The modules listed in ``robotlab.bus.native.MODULES`` are compiled into C extensions from their
typed source, when mypyc (it comes with mypy, in the dev extra and the lock) can be imported and
``ROBOT_LAB_COMPILE`` is not ``0``. Without it the same source is installed and runs as pure
Python: nothing else changes. ``make venv`` installs without build isolation, so the locked mypy
does the build.

broker/ installs as ``robotlab.broker`` (the package-dir mapping in pyproject.toml), a mapping
mypy cannot read; mypyc names a module after the folders it sits in, so it is given a tree of
links under build/ in which every module sits at its installed name.
"""

from __future__ import annotations

import os
import runpy
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_ext import build_ext
from setuptools.errors import BaseError, CCompilerError

ROOT = Path(__file__).resolve().parent
FOLDERS = {"robotlab.broker": "broker", "robotlab.robotd": "robotd", "robotlab.cli": "cli"}
STAGE = ROOT / "build" / "mypyc-src"
CONFIG = """[mypy]
python_version = 3.11
cache_dir = {cache}
follow_imports = silent
ignore_missing_imports = True
""" + ("[mypy-litellm.*,openai.*,pydantic.*,pydantic_settings.*,opentelemetry.*,mcp.*,httpx.*,"
      "jinja2.*,git.*,rich.*]\n"
      "follow_imports = skip\n")


def staged_tree() -> Path:
    """build/mypyc-src/robotlab: links to robotlab/'s entries and to the folders mapped under it."""
    package = STAGE / "robotlab"
    package.mkdir(parents=True, exist_ok=True)
    links = {entry.name: entry for entry in (ROOT / "robotlab").iterdir()
             if entry.name != "__pycache__"}
    links.update({name.rpartition(".")[2]: ROOT / folder for name, folder in FOLDERS.items()})
    for name, target in links.items():
        link = package / name
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(target)
    return package


def compile_asked() -> str:
    """``ROBOT_LAB_COMPILE``, else its old name ``ROBOTLAB_COMPILE`` (read until 0.2.0, with a
    warning), else ``1``. Read here, not through robotlab.environment: the build runs
    where robotlab's dependencies may not be installed yet."""
    if "ROBOT_LAB_COMPILE" in os.environ:
        return os.environ["ROBOT_LAB_COMPILE"]
    if "ROBOTLAB_COMPILE" in os.environ:
        print("robotlab: $ROBOTLAB_COMPILE is deprecated and read only until robotlab 0.2.0: set "
              "ROBOT_LAB_COMPILE instead", file=sys.stderr)
        return os.environ["ROBOTLAB_COMPILE"]
    return "1"


def native_extensions() -> list[object]:
    """The compiled modules, or none (pure Python) when mypyc is missing or not wanted."""
    if compile_asked() == "0":
        return []
    try:
        from mypyc.build import mypycify
    except ImportError:
        print("robotlab: mypyc is not installed; the bus runs as pure Python", file=sys.stderr)
        return []
    native = runpy.run_path(str(ROOT / "robotlab" / "bus" / "native.py"))
    staged_tree()
    config = ROOT / "build" / "mypyc.ini"
    config.write_text(CONFIG.format(cache=ROOT / "build" / "mypyc-cache"))
    paths = [str(STAGE / (name.replace(".", "/") + ".py")) for name in native["MODULES"]]
    print(f"robotlab: compiling {len(paths)} modules with mypyc (type check, C, then one C "
          "compile): "
          f"{', '.join(native['MODULES'])}", file=sys.stderr)
    try:
        extensions: list[object] = mypycify([f"--config-file={config}", *paths],
                                            group_name=native["GROUP"],
                                            opt_level="3", target_dir=str(ROOT / "build" / "mypyc"))
    except (Exception, SystemExit) as exc:  # mypyc exits on a type error: the install still works
        print(f"robotlab: mypyc could not compile the bus ({exc!r}); it runs as pure Python",
              file=sys.stderr)
        return []
    return extensions


class BuildNative(build_ext):
    """build_ext that leaves every compiled module newer than its source, built or not.

    robotlab.bus.native runs the pure source when a ``.py`` is newer than the compiled group. When
    mypyc generates the same C as last time (a source touched, or edited without changing its
    code), nothing is compiled again, so the extensions are marked current here.
    """

    def run(self) -> None:
        try:
            super().run()
        # no C compiler, no Python.h: pure Python
        except (BaseError, CCompilerError, OSError) as exc:
            print(f"robotlab: the bus's hot path did not compile ({exc}); it runs as pure Python",
                  file=sys.stderr)
            return  # a group left half built is never run: robotlab.bus.native finds it incomplete
        build_py = self.get_finalized_command("build_py")
        for ext in self.extensions:
            package, _, leaf = self.get_ext_fullname(ext.name).rpartition(".")
            for folder in (build_py.get_package_dir(package),
                           os.path.dirname(self.get_ext_fullpath(ext.name))):
                built = Path(folder) / self.get_ext_filename(leaf)
                if built.exists():
                    os.utime(built)
        remove_orphans()


def remove_orphans(root: Path = ROOT) -> list[Path]:
    """Delete the compiled modules whose source is gone (a module moved or renamed) or that the
    list no longer names (a module taken off the hot path): built in place and ignored by git,
    they would outlive a pull and answer an import of the old name with old code, or with an
    entry point the new group does not have. Returns what it deleted."""
    listed = set(runpy.run_path(str(root / "robotlab" / "bus" / "native.py"))["MODULES"])
    removed = []
    for folder, package in ((root / "robotlab" / "bus", "robotlab.bus"),
                            (root / "broker", "robotlab.broker")):
        for built in sorted(folder.rglob("*.cpython-*.so")):
            name = built.name.split(".", 1)[0]
            if name.endswith("__mypyc"):
                continue
            module = ".".join([package, *built.parent.relative_to(folder).parts, name])
            gone = not built.with_name(f"{name}.py").exists()
            if gone or module not in listed:
                why = "its source is gone" if gone else "it is not compiled any more"
                print(f"robotlab: removing {built.relative_to(root)}: {why}", file=sys.stderr)
                built.unlink()
                removed.append(built)
    return removed


# Run as a build runs it (setuptools executes this file as __main__), not when a test imports it.
if __name__ == "__main__":
    setup(ext_modules=native_extensions(), cmdclass={"build_ext": BuildNative})
