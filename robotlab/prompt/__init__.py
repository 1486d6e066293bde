"""Prompts: templates with YAML front matter, template skills, and the composed system message."""

from __future__ import annotations

from robotlab.prompt.templates import Template, load_template, render_template

__all__ = ["Template", "load_template", "render_template"]
