"""One record of "which model": no class but ``ModelSettings`` declares a ``model`` field.

``robotlab.config.model_settings.ModelSettings`` holds the model, its provider, its server,
the sampling, the output cap and the time-out; ``RunConfig``, the global ``ruby_llm`` section,
robotd's robot spec and spawn's fork request hold or extend it. A second class declaring its
own ``model`` starts a second record whose defaults and validation drift from the first.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from tests.test_shape import parse, rel, source_files

THE_RECORD = ("robotlab/config/model_settings.py", "ModelSettings")

# Classes that still declare their own ``model``, each with the reason; an entry comes out
# when its class stops declaring one (the test below fails on a stale entry).
ALLOWED: dict[tuple[str, str], str] = {
    ("robotlab/to/config.py", "FileKeys"): (
        "robot-to's flat file and ROBOT_LAB_TO_* keys (provider, model, api_base) with "
        "robot-to's own default model, which its spec requires beside the library's; its "
        "model_settings property makes the record from them"
    ),
}


SETTINGS_BASES = {"BaseModel", "BaseSettings"}
"""Bases that make a class a setting (pydantic), not a report of what happened."""
ROUTE_FIELDS = {"provider", "api_base"}
"""Fields beside ``model`` that make a class say where a call goes."""


def base_names(node: ast.ClassDef) -> set[str]:
    return {base.id if isinstance(base, ast.Name) else base.attr for base in node.bases
            if isinstance(base, (ast.Name, ast.Attribute))}


def record_family(trees: list[ast.Module]) -> set[str]:
    """ModelSettings and every class extending it, however deep (by name, across the files)."""
    classes = [node for tree in trees for node in ast.walk(tree) if isinstance(node, ast.ClassDef)]
    family = {THE_RECORD[1]}
    while grown := {node.name for node in classes if base_names(node) & family} - family:
        family |= grown
    return family


def fields(node: ast.ClassDef) -> dict[str, ast.AnnAssign]:
    return {statement.target.id: statement for statement in node.body
            if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name)}


def model_fields(tree: ast.Module, family: set[str]) -> Iterator[tuple[str, int]]:
    """(class name, line) of every class whose ``model`` field is a second record of which model
    to call: the class is a setting (pydantic, or in the record's family) or also names the
    provider or server, and the field is not the record itself (``model: RobotModel`` holds it).
    A plain ``model`` reporting which model answered (a reply, a history entry) is a fact."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef) or "model" not in (declared := fields(node)):
            continue
        annotation = ast.walk(declared["model"].annotation)
        holds = {n.id for n in annotation if isinstance(n, ast.Name)} & family
        setting = base_names(node) & (SETTINGS_BASES | family) or ROUTE_FIELDS & set(declared)
        if setting and not holds:
            yield node.name, declared["model"].lineno


def declarations() -> dict[tuple[str, str], int]:
    """Every ``model`` field of the source folders: (file, class) -> line."""
    trees = {rel(path): parse(path) for path, _module in source_files()}
    family = record_family(list(trees.values()))
    return {(path, name): line for path, tree in trees.items()
            for name, line in model_fields(tree, family)}


def test_only_model_settings_declares_a_model_field() -> None:
    stray = [f"{path}:{line}: class {name} declares its own `model`; hold or extend "
             "robotlab.config.model_settings.ModelSettings instead"
             for (path, name), line in sorted(declarations().items())
             if (path, name) != THE_RECORD and (path, name) not in ALLOWED]
    assert not stray, "\n".join(stray)


def test_the_record_and_every_allowed_class_still_declare_it() -> None:
    found = declarations()
    assert THE_RECORD in found
    stale = [f"{path}: {name} no longer declares `model`: take it out of ALLOWED"
             for path, name in ALLOWED if (path, name) not in found]
    assert not stale, "\n".join(stale)


PLANTED = """
class Picked(BaseModel):
    model: str = "other"


@dataclass
class Route:
    model: str
    api_base: str | None = None


class Narrower(ModelSettings):
    model: str


class Answered:
    model: str | None = None


class Holder(BaseModel):
    model: ModelSettings
"""


def test_planted_second_records_are_found_and_facts_and_holders_are_not() -> None:
    tree = ast.parse(PLANTED)
    found = [name for name, _line in model_fields(tree, record_family([tree]))]
    assert found == ["Picked", "Route", "Narrower"]
