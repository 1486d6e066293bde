"""Prompt templates: Markdown files with YAML front matter and a jinja2 body.

``<name>.md`` is looked up in, in order: ``prompts_dir`` and ``template_path`` from the global
configuration (``ROBOT_LAB_TEMPLATE_PATH``, os.pathsep-separated), ``./prompts`` and
``~/.prompts``. Front-matter ``parameters:`` declares variables with defaults; a null default
makes the parameter required. Bodies render with strict undefined variables, so a missing
variable fails loudly.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from robotlab.errors import ConfigError

__all__ = ["Template", "find_template", "load_template", "render_template", "search_path"]

_cache: dict[Path, tuple[tuple[int, int], Template]] = {}
"""Parsed templates by path, with the file's (mtime in ns, size) they were read at: a file
rewritten within the clock's tick (a few ms) keeps its mtime, but seldom its size too."""
_cache_lock = threading.Lock()
_environment: Any = None


def _jinja() -> Any:
    global _environment
    if _environment is None:
        import jinja2

        _environment = jinja2.Environment(undefined=jinja2.StrictUndefined,
                                          keep_trailing_newline=False)
    return _environment


@dataclass(frozen=True)
class Template:
    """A parsed template: its front matter (``meta``) and body."""

    name: str
    path: Path
    meta: dict[str, Any]
    body: str
    first_line: int = 1
    """The file's line the body starts on, so an error in the body names the file's line."""
    _compiled: list[Any] = field(default_factory=list, repr=False, compare=False)

    @property
    def parameters(self) -> dict[str, Any]:
        """Declared parameters and their defaults (None: required)."""
        return dict(self.meta.get("parameters") or {})

    def missing(self, context: dict[str, Any]) -> list[str]:
        """Required parameters that ``context`` does not supply."""
        return [k for k, v in self.parameters.items() if v is None and context.get(k) is None]

    def render(self, context: dict[str, Any] | None = None) -> str:
        """The body rendered with the defaults overlaid by ``context``.

        Raises:
            ConfigError: a required parameter is missing ("Missing required parameters: ..."),
                the body is not valid Jinja (the file, its line and Jinja's words), or it uses
                a variable that nothing defines.
        """
        context = dict(context or {})
        missing = self.missing(context)
        if missing:
            raise ConfigError(f"Missing required parameters: {', '.join(missing)} "
                              f"(template {self.name})")
        values = {k: v for k, v in self.parameters.items() if v is not None}
        values.update({k: v for k, v in context.items() if v is not None})
        import jinja2

        if not self._compiled:
            self._compiled.append(self._compile())
        try:
            return self._compiled[0].render(**values).strip()
        except jinja2.UndefinedError as exc:
            raise ConfigError(f"template {self.name} ({self.path}): {exc.message}") from exc
        except jinja2.TemplateError as exc:  # a filter or a test misused: still the author's to fix
            raise ConfigError(f"template {self.name} ({self.path}): {exc}") from exc

    def _compile(self) -> Any:
        import jinja2

        try:
            return _jinja().from_string(self.body)
        except jinja2.TemplateSyntaxError as exc:
            line = self.first_line + (exc.lineno or 1) - 1
            raise ConfigError(
                f"template {self.name}: {self.path}, line {line}: {exc.message}") from exc


def search_path() -> list[Path]:
    """Where templates are looked for, in order."""
    from robotlab.config.cascade import config

    settings = config()
    paths: list[str] = [settings.prompts_dir] if settings.prompts_dir else []
    configured = settings.template_path or []
    if isinstance(configured, str):
        configured = [p for p in configured.split(os.pathsep) if p]
    paths.extend(configured)
    defaults = [Path("prompts"), Path("~/.prompts").expanduser()]
    return [Path(p).expanduser() for p in paths] + defaults


def find_template(name: str) -> Path:
    """The file of template ``name`` (a name, or a path to a ``.md`` file).

    Raises:
        ConfigError: no such template; the message lists every place looked at.
    """
    direct = Path(name).expanduser()
    if direct.suffix == ".md" and direct.is_file():
        return direct
    filename = name if name.endswith(".md") else f"{name}.md"
    looked = search_path()
    for directory in looked:
        candidate = directory / filename
        if candidate.is_file():
            return candidate
    places = ", ".join(str(d) for d in looked)
    raise ConfigError(f"template {name!r} not found; looked for {filename} in: {places}")


def _parse(name: str, path: Path) -> Template:
    import yaml

    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"template {name}: {path} is not UTF-8 text ({exc.reason} at byte "
                          f"{exc.start}); save it as UTF-8") from exc
    meta: Any = {}
    body = text
    if text.startswith("---"):
        parts = text.split("\n---", 1)
        if len(parts) == 2:
            try:
                meta = yaml.safe_load(parts[0][3:]) or {}
            except yaml.YAMLError as exc:
                raise ConfigError(f"template {name}: bad front matter: {exc}") from exc
            body = parts[1].split("\n", 1)[1] if "\n" in parts[1] else ""
    if not isinstance(meta, dict):
        raise ConfigError(f"template {name}: front matter must be a mapping")
    _check_shapes(name, meta)
    first_line = text[: len(text) - len(body)].count("\n") + 1
    return Template(name, path, meta, body, first_line=first_line)


FRONT_MATTER_SHAPES: dict[str, tuple[type, str]] = {
    "parameters": (dict, "a mapping of names to defaults (null: required)"),
    "skills": (list, "a list of template names"),
    "tools": (list, "a list of import paths (package.module:ToolClass)"),
    "robot_name": (str, "a robot name"),
    "description": (str, "text"),
}
"""What the front matter's own keys hold (the LLM fields are checked with the robot's config)."""


def _check_shapes(name: str, meta: dict[str, Any]) -> None:
    """Refuse, naming the key and what it holds, a front-matter key of the wrong shape."""
    for key, (kind, shape) in FRONT_MATTER_SHAPES.items():
        value = meta.get(key)
        if value is not None and not isinstance(value, kind):
            raise ConfigError(f"template {name}: front matter {key!r} must be {shape}, not "
                              f"{type(value).__name__}")
    for key in ("skills", "tools"):
        if not all(isinstance(item, str) for item in meta.get(key) or []):
            raise ConfigError(f"template {name}: front matter {key!r} must be "
                              f"{FRONT_MATTER_SHAPES[key][1]}, each a string")


def load_template(name: str) -> Template:
    """Find and parse template ``name`` (cached until the file changes)."""
    path = find_template(name)
    stat = path.stat()
    stamp = (stat.st_mtime_ns, stat.st_size)
    with _cache_lock:
        cached = _cache.get(path)
        if cached and cached[0] == stamp:
            return cached[1]
    template = _parse(name, path)
    with _cache_lock:
        _cache[path] = (stamp, template)
    return template


def render_template(name: str, **context: Any) -> str:
    """Render template ``name`` with its front-matter parameters given as keyword arguments.

    Raises:
        ConfigError: the template is missing, or a required parameter was not given.
    """
    return load_template(name).render(context)
