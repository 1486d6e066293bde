"""The switch and the set-up of tracing, and the trace context a bus header carries.

``ENABLED`` is False until an entry point calls :func:`setup` with settings that name an
exporter and the OpenTelemetry SDK imports (``pip install 'robotlab[otel]'``). Every traced
path checks ``tracing.ENABLED`` first and does nothing else when it is False: no SDK import,
no span, no header key. Read ``docs/observability.md`` for the spans and the variables.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import sys
import threading
from typing import Any

from robotlab.errors import ConfigError

from .tracing_settings import ENV_EXIT_SECONDS, ENV_TRACES_FILE, TraceSettings

log = logging.getLogger("robotlab.observability")

ENABLED = False
"""True once :func:`setup` installed a tracer provider with at least one exporter."""
TRACE_KEYS = ("traceparent", "tracestate")
"""The W3C trace context fields, as optional keys of a SEND (and so DELIVER) header."""

_tracer: Any = None
_propagator: Any = None
_provider: Any = None
_exporters: list[Any] = []
_exit_seconds = 0.0


def setup(settings: TraceSettings, service: str) -> bool:
    """Install a tracer provider exporting as ``settings`` say; True when tracing is now on.

    ``service`` names the process (``robotlab-broker``, ``robotd-bob``) unless
    ``OTEL_SERVICE_NAME`` did. Without exporters nothing happens. With exporters but without
    the SDK, one warning says how to install it and tracing stays off.

    Raises:
        ConfigError: an exporter name nothing provides, or ``jsonl`` without its file.
    """
    global ENABLED, _tracer, _propagator, _provider, _exporters, _exit_seconds
    if not settings.enabled or ENABLED:
        return ENABLED
    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
    except ImportError:
        log.warning("OTEL_TRACES_EXPORTER asks for traces, but the OpenTelemetry SDK is not "
                    "installed: pip install 'robotlab[otel]' (tracing stays off)")
        return False
    exporters = [_exporter(name, settings) for name in settings.exporters]
    # Not the SDK's own flush at exit: its batch processor waits up to 30 s for an exporter
    # that retries an unreachable collector for 10, which every command then paid. flush() at
    # exit (which a SIGTERM'd daemon reaches too) waits settings.exit_seconds, no longer.
    resource = Resource.create({"service.name": settings.service_name or service})
    provider = TracerProvider(resource=resource, shutdown_on_exit=False)
    for exporter in exporters:
        provider.add_span_processor(BatchSpanProcessor(exporter))  # OTEL_BSP_* tune it
    _tracer, _provider, _exporters = provider.get_tracer("robotlab"), provider, exporters
    _exit_seconds = settings.exit_seconds
    _propagator = TraceContextTextMapPropagator()
    atexit.register(flush)
    ENABLED = True
    return True


def _exporter(name: str, settings: TraceSettings) -> Any:
    if name == "jsonl":
        return _jsonl_exporter(settings.traces_file)
    if name == "otlp":  # the SDK's own naming: the protocol picks the package
        name = "otlp_proto_grpc" if settings.otlp_protocol == "grpc" else "otlp_proto_http"
    # by default the SDK's console exporter writes to stdout, which is a command's output
    # (send --wait's reply)
    if name == "console":
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        return ConsoleSpanExporter(out=sys.stderr)
    # imported here: it costs every process a megabyte and 20 ms, and only an exporter needs it
    import importlib.metadata

    found = importlib.metadata.entry_points(group="opentelemetry_traces_exporter", name=name)
    if not found:
        raise ConfigError(f"OTEL_TRACES_EXPORTER names {name!r}, which no installed package "
                          "provides: use otlp, console or jsonl (pip install 'robotlab[otel]' for "
                          "otlp over HTTP)")
    return next(iter(found)).load()()


def _jsonl_exporter(path: str | None) -> Any:
    from opentelemetry.sdk.trace.export import ConsoleSpanExporter

    if not path:
        raise ConfigError(f"OTEL_TRACES_EXPORTER=jsonl needs {ENV_TRACES_FILE}=PATH, the file to "
                          "append spans to")
    try:
        # a line a write: processes may share it
        stream = open(path, "a", buffering=1, encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{ENV_TRACES_FILE}={path}: cannot open it for appending "
                          f"({exc.strerror})") from exc
    return ConsoleSpanExporter(out=stream, formatter=lambda span: span.to_json(indent=None) + "\n")


def flush() -> None:
    """Export the spans still queued, waiting ``ROBOT_LAB_TRACES_EXIT_SECONDS`` at most; those not
    out by then are dropped, with one warning, and the exporters stop retrying.

    It runs at exit; a forked child calls it before ``os._exit``, which skips what runs at exit.
    The SDK's batch processor restarts its thread in a forked child by itself
    (``os.register_at_fork``), so a child of a traced process keeps tracing.
    """
    if not ENABLED or _provider is None:
        return
    # On a thread of its own: the SDK's force_flush ignores its time-out, and an OTLP exporter
    # retries an unreachable collector with backoff for 10 s.
    flushing = threading.Thread(target=_provider.force_flush, name="robotlab-trace-flush",
                                daemon=True)
    flushing.start()
    flushing.join(_exit_seconds)
    if flushing.is_alive():
        log.warning("traces: the spans still queued were not exported within %gs (is the "
                    "collector up? %s sets how long to wait); dropped", _exit_seconds,
                    ENV_EXIT_SECONDS)
        for exporter in _exporters:  # an OTLP exporter's shutdown ends its backoff waits at once
            with contextlib.suppress(Exception):
                exporter.shutdown()


def tracer() -> Any:
    """The process's tracer (only call it when ``ENABLED``)."""
    return _tracer


def inject(header: dict[str, Any], context: Any = None) -> None:
    """Write the current (or the given) span context into ``header``.

    It goes in as ``traceparent``/``tracestate``.
    """
    _propagator.inject(header, context=context)


def extract(header: dict[str, Any]) -> Any:
    """The context a header carries (an empty one when it carries none), as a span parent."""
    return _propagator.extract({key: header[key] for key in TRACE_KEYS if key in header})


def carried(header: dict[str, Any]) -> dict[str, Any]:
    """The trace fields of ``header`` (none unless tracing is on), to keep beside a message."""
    return {key: header[key] for key in TRACE_KEYS if key in header} if ENABLED else {}

