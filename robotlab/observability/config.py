"""Which traces to export, read once from the standard ``OTEL_*`` variables (and one of ours).

This is the only module of :mod:`robotlab.observability` that reads ``os.environ``; the entry
points call :func:`trace_settings` and hand the result to :func:`~.tracing.setup`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

ENV_TRACES_FILE = "ROBOTLAB_TRACES_FILE"
"""Where the ``jsonl`` exporter appends one JSON object per finished span."""


@dataclass(frozen=True)
class TraceSettings:
    """What the process exports. No exporter names: tracing stays off and costs nothing."""

    exporters: tuple[str, ...] = ()
    """Exporter names (``otlp``, ``console``, ``jsonl``, or an ``opentelemetry_traces_exporter``
    entry point), from ``OTEL_TRACES_EXPORTER``."""
    service_name: str | None = None
    """``OTEL_SERVICE_NAME``; None lets the process name itself (``robotlab-broker``, ``robotd-bob``)."""
    otlp_protocol: str = "http/protobuf"
    """``OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`` or ``OTEL_EXPORTER_OTLP_PROTOCOL``."""
    traces_file: str | None = None
    """``ROBOTLAB_TRACES_FILE``: the ``jsonl`` exporter's file."""

    @property
    def enabled(self) -> bool:
        """True when some exporter is configured."""
        return bool(self.exporters)


def trace_settings(environ: Mapping[str, str] | None = None) -> TraceSettings:
    """The settings the environment asks for.

    ``OTEL_TRACES_EXPORTER`` names the exporters (``none`` for none). Left unset, an OTLP
    endpoint (``OTEL_EXPORTER_OTLP_ENDPOINT`` or ``..._TRACES_ENDPOINT``) means ``otlp``, and no
    endpoint means no tracing: unlike the SDK's own default, a process nobody asked to trace
    never tries to reach a collector. ``OTEL_SDK_DISABLED=true`` turns everything off.
    """
    env = os.environ if environ is None else environ
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return TraceSettings()
    named = env.get("OTEL_TRACES_EXPORTER")
    if named is None:
        endpoint = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or env.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        named = "otlp" if endpoint else ""
    exporters = tuple(name.strip().lower() for name in named.split(",") if name.strip().lower() not in ("", "none"))
    protocol = env.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or env.get("OTEL_EXPORTER_OTLP_PROTOCOL") or "http/protobuf"
    return TraceSettings(exporters=exporters, service_name=env.get("OTEL_SERVICE_NAME") or None,
                         otlp_protocol=protocol, traces_file=env.get(ENV_TRACES_FILE) or None)
