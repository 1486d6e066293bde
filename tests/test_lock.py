"""The committed lock covers every declared requirement, pinned inside its range, with hashes.

`make venv` installs requirements.lock with pip's --require-hashes; a requirement added to
pyproject.toml without `make lock` would then be missing from every fresh clone.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
PIN = re.compile(r"^([A-Za-z0-9._-]+)==([^\s;\\]+)")


def _locked() -> dict[str, list[tuple[str, int]]]:
    """Each locked name: its pins (one per environment marker), each a version and its hash
    count."""
    pins: dict[str, list[tuple[str, int]]] = {}
    name = ""
    for line in (ROOT / "requirements.lock").read_text().splitlines():
        if match := PIN.match(line):
            name = canonicalize_name(match[1])
            pins.setdefault(name, []).append((match[2], 0))
        elif line.strip().startswith("--hash=sha256:") and name:
            version, hashes = pins[name][-1]
            pins[name][-1] = (version, hashes + 1)
    return pins


def _declared() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    extras = project["project"]["optional-dependencies"]
    lines = [*project["project"]["dependencies"], *extras["dev"],
             *project["build-system"]["requires"]]
    requirements = [Requirement(line) for line in lines]
    # The dev extra names other extras of the project itself ("robotlab[otel]"): the lock holds
    # what they name, never the project.
    own = canonicalize_name(project["project"]["name"])
    for requirement in [r for r in requirements if canonicalize_name(r.name) == own]:
        requirements.remove(requirement)
        requirements += [Requirement(line) for extra in sorted(requirement.extras)
                         for line in extras[extra]]
    return requirements


def test_every_declared_requirement_is_locked_inside_its_range() -> None:
    pins = _locked()
    for requirement in _declared():
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{requirement} is not in requirements.lock: run `make lock`"
        versions = [version for version, _ in pins[name]]
        assert any(requirement.specifier.contains(v, prereleases=True) for v in versions), (
            f"requirements.lock pins {name} at {versions}, none inside {requirement}: run `make "
            "lock`"
        )


def test_every_pin_carries_a_hash() -> None:
    pins = _locked()
    assert {"pip", "setuptools",
            "wheel"} <= set(pins), "the installer and build backend are locked too"
    unhashed = sorted(name for name, entries in pins.items()
                      if any(hashes == 0 for _, hashes in entries))
    assert not unhashed, f"pins without --hash (pip's --require-hashes refuses them): {unhashed}"
