"""Observability: OpenTelemetry traces across processes, off unless an exporter is configured."""

from __future__ import annotations

from .tracing import setup
from .tracing_settings import TraceSettings, trace_settings

__all__ = ["TraceSettings", "setup", "trace_settings"]
