"""Observability: OpenTelemetry traces across processes, off unless an exporter is configured."""

from __future__ import annotations

from .config import TraceSettings, trace_settings
from .tracing import setup

__all__ = ["TraceSettings", "setup", "trace_settings"]
