"""Which traces to export, read once from the standard ``OTEL_*`` variables (and two of ours).

This is the only module of :mod:`robotlab.observability` that reads ``os.environ`` (ours through
:func:`robotlab.environment.variable`); the entry points call :func:`trace_settings` and
hand the result to :func:`~.tracing.setup`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from robotlab.environment import variable
from robotlab.errors import ConfigError

ENV_TRACES_FILE = "ROBOT_LAB_TRACES_FILE"
"""Where the ``jsonl`` exporter appends one JSON object per finished span."""
ENV_EXIT_SECONDS = "ROBOT_LAB_TRACES_EXIT_SECONDS"
"""How long a process may spend exporting its last spans as it leaves."""
EXIT_SECONDS = 0.08
"""The default of ``ROBOT_LAB_TRACES_EXIT_SECONDS``: time for a collector on this host or network
to take the last spans, and so little that an unreachable one never slows a command down."""


class TraceSettings:
    """What the process exports. No exporter names: tracing stays off and costs nothing.

    Immutable; equal to another with the same fields.
    """

    # A plain class, not a dataclass: a handler-only robotd imports this, and so never imports
    # dataclasses (nor inspect, dis and ast with it).

    __slots__ = __match_args__ = ("exporters", "service_name", "otlp_protocol", "traces_file",
                                  "exit_seconds")

    exporters: tuple[str, ...]
    """Exporter names (``otlp``, ``console``, ``jsonl``, or an ``opentelemetry_traces_exporter``
    entry point), from ``OTEL_TRACES_EXPORTER``."""
    service_name: str | None
    """``OTEL_SERVICE_NAME``; None lets the process name itself (``robotlab-broker``,
    ``robotd-bob``)."""
    otlp_protocol: str
    """``OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`` or ``OTEL_EXPORTER_OTLP_PROTOCOL``."""
    traces_file: str | None
    """``ROBOT_LAB_TRACES_FILE``: the ``jsonl`` exporter's file."""
    exit_seconds: float
    """``ROBOT_LAB_TRACES_EXIT_SECONDS``: the longest a process waits at exit (or before a forked
    child's ``os._exit``) for its last spans to be exported; those still queued then are dropped."""

    def __init__(self, exporters: tuple[str, ...] = (), service_name: str | None = None,
                 otlp_protocol: str = "http/protobuf", traces_file: str | None = None,
                 exit_seconds: float = EXIT_SECONDS) -> None:
        object.__setattr__(self, "exporters", exporters)
        object.__setattr__(self, "service_name", service_name)
        object.__setattr__(self, "otlp_protocol", otlp_protocol)
        object.__setattr__(self, "traces_file", traces_file)
        object.__setattr__(self, "exit_seconds", exit_seconds)

    @property
    def enabled(self) -> bool:
        """True when some exporter is configured."""
        return bool(self.exporters)

    def _fields(self) -> tuple[tuple[str, ...], str | None, str, str | None, float]:
        return (self.exporters, self.service_name, self.otlp_protocol, self.traces_file,
                self.exit_seconds)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, TraceSettings) and other.__class__ is self.__class__:
            return self._fields() == other._fields()
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        return (f"TraceSettings(exporters={self.exporters!r}, "
                f"service_name={self.service_name!r}, otlp_protocol={self.otlp_protocol!r}, "
                f"traces_file={self.traces_file!r}, exit_seconds={self.exit_seconds!r})")

    def __reduce__(self) -> tuple[type[TraceSettings], tuple[object, ...]]:
        return (self.__class__, self._fields())

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"cannot assign to field {name!r}: TraceSettings is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}: TraceSettings is immutable")


def trace_settings(environ: Mapping[str, str] | None = None) -> TraceSettings:
    """The settings the environment asks for.

    ``OTEL_TRACES_EXPORTER`` names the exporters (``none`` for none). Left unset, an OTLP
    endpoint (``OTEL_EXPORTER_OTLP_ENDPOINT`` or ``..._TRACES_ENDPOINT``) means ``otlp``, and no
    endpoint means no tracing: unlike the SDK's own default, a process nobody asked to trace
    never tries to reach a collector. ``OTEL_SDK_DISABLED=true`` turns everything off.

    Raises:
        ConfigError: ``ROBOT_LAB_TRACES_EXIT_SECONDS`` is not a number of seconds.
    """
    env = os.environ if environ is None else environ
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return TraceSettings()
    named = env.get("OTEL_TRACES_EXPORTER")
    if named is None:
        endpoint = (env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
                    or env.get("OTEL_EXPORTER_OTLP_ENDPOINT"))
        named = "otlp" if endpoint else ""
    exporters = tuple(name.strip().lower() for name in named.split(",")
                      if name.strip().lower() not in ("", "none"))
    protocol = (env.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
                or env.get("OTEL_EXPORTER_OTLP_PROTOCOL") or "http/protobuf")
    return TraceSettings(exporters=exporters, service_name=env.get("OTEL_SERVICE_NAME") or None,
                         otlp_protocol=protocol,
                         traces_file=variable(ENV_TRACES_FILE, env) or None,
                         exit_seconds=_seconds(variable(ENV_EXIT_SECONDS, env)))


def _seconds(text: str | None) -> float:
    """``ROBOT_LAB_TRACES_EXIT_SECONDS`` as a number of seconds.

    Raises:
        ConfigError: not a number, or negative.
    """
    if text is None or not text.strip():
        return EXIT_SECONDS
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not seconds >= 0:  # also refuses nan
        raise ConfigError(f"{ENV_EXIT_SECONDS} must be a number of seconds (0 or more), "
                          f"got {text!r}")
    return seconds
