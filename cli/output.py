"""Printing rows for people (a rich table) or programs (JSON)."""

from __future__ import annotations

import json
import sys
from typing import Any

import click


def print_rows(rows: list[dict[str, Any]], columns: list[str], *, as_json: bool,
               empty: str) -> None:
    """Print ``rows`` as JSON, or as a table of ``columns`` (``empty`` when there are none)."""
    if as_json:
        click.echo(json.dumps(rows, indent=2, default=_jsonable))
        return
    if not rows:
        click.echo(empty, err=True)
        return
    from rich.console import Console

    # On a terminal, long cells are cut to fit; in a pipe or a file nothing is cut or wrapped.
    on_terminal = sys.stdout.isatty()
    console = Console(soft_wrap=True, width=None if on_terminal else 100_000)
    console.print(table(rows, columns, cut=on_terminal))


def table(rows: list[dict[str, Any]], columns: list[str], *, cut: bool) -> Any:
    """A rich table of ``columns`` (headers upper-cased); ``cut`` clips cells longer than 60
    characters."""
    from rich.table import Table

    grid = Table(box=None, pad_edge=False)
    for column in columns:
        grid.add_column(column.replace("_", " ").upper())
    for row in rows:
        grid.add_row(*(_cell(row.get(column), cut=cut) for column in columns))
    return grid


def _cell(value: Any, cut: bool) -> str:
    if value is None:
        return "-"
    text = value if isinstance(value, str) else json.dumps(value, default=_jsonable)
    return text if len(text) <= 60 or not cut else text[:57] + "..."


def _jsonable(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)
