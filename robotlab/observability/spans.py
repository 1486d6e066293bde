"""The spans robotlab records, named by the OpenTelemetry semantic conventions.

Bus hops follow the messaging conventions (``send {robot}`` by the sender, ``route {robot}``
by the broker from accepting a message until it settles, ``process {robot}`` by the
receiver); a robot's work follows the GenAI ones (``invoke_agent {robot}``, ``chat {model}``,
``execute_tool {tool}``); robot-to's run and iterations are :func:`step` spans around them.
Callers check ``tracing.ENABLED`` before calling anything here, except :func:`step` and
:func:`annotate`, which check it themselves.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from . import tracing

SYSTEM = "robotlab"
"""``messaging.system`` of every bus span."""
TRACESTATE_MAX = 512
"""Longest ``tracestate`` a header carries (the W3C bound; the bus header schema's too)."""


def _kind(name: str) -> Any:
    from opentelemetry.trace import SpanKind

    return getattr(SpanKind, name)


def _error(span: Any, kind: str, description: str) -> None:
    from opentelemetry.trace import Status, StatusCode

    span.set_attribute("error.type", kind)
    span.set_status(Status(StatusCode.ERROR, description))


def _messaging(header: dict[str, Any], operation: str, destination: str) -> dict[str, Any]:
    return {"messaging.system": SYSTEM, "messaging.operation.type": operation,
            "messaging.operation.name": operation, "messaging.destination.name": destination,
            "messaging.message.id": str(header.get("id", ""))}


def _put_context(header: dict[str, Any], span: Any) -> None:
    from opentelemetry import trace

    tracing.inject(header, trace.set_span_in_context(span))
    if len(header.get("tracestate", "")) > TRACESTATE_MAX:
        del header["tracestate"]  # the broker refuses longer ones; the trace id is in traceparent


def sent(header: dict[str, Any]) -> None:
    """Record ``send {to}`` for a SEND about to go out, and put its context in ``header``."""
    span = tracing.tracer().start_span(f"send {header['to']}", kind=_kind("PRODUCER"),
                                       attributes=_messaging(header, "send", header["to"]))
    _put_context(header, span)
    span.end()


def routing(header: dict[str, Any]) -> Any:
    """Start the broker's ``route {to}`` span for a traced SEND; deliveries carry its context.

    The caller ends it with :func:`settled` once every copy of the message is settled. A reply
    (``untracked``) never settles in the broker: its span ends at once, and None is returned.
    """
    attributes = (_messaging(header, "route", header["to"])
                  | {"messaging.client.id": str(header.get("from_instance", ""))})
    span = tracing.tracer().start_span(f"route {header['to']}", context=tracing.extract(header),
                                       kind=_kind("SERVER"), attributes=attributes)
    _put_context(header, span)
    if header.get("untracked"):
        span.end()
        return None
    return span


def settled(span: Any, receipt: dict[str, Any]) -> None:
    """End a ``route`` span with the message's fate (the receipt the broker made for it)."""
    span.set_attribute("robotlab.delivery.status", receipt["status"])
    span.set_attribute("robotlab.delivery.instances", list(receipt.get("instances", ())))
    if receipt.get("dlq_id"):
        span.set_attribute("robotlab.dlq.id", receipt["dlq_id"])
    if receipt["status"] != "delivered":
        _error(span, receipt["status"], str(receipt.get("detail", "")))
    span.end()


@contextmanager
def processing(name: str, message: Any) -> Iterator[Any]:
    """``process {name}`` around a receiver's handling of ``message``.

    The span is a child of its sender's span.
    """
    header = {**message.extra, "id": message.id}
    attributes = _messaging(header, "process", name) | {"messaging.robotlab.sender": message.sender}
    with tracing.tracer().start_as_current_span(f"process {name}",
                                                context=tracing.extract(header),
                                                kind=_kind("CONSUMER"),
                                                attributes=attributes) as span:
        yield span


def _genai(operation: str, model: str | None) -> dict[str, Any]:
    attributes: dict[str, Any] = {"gen_ai.operation.name": operation}
    if model:
        attributes["gen_ai.request.model"] = model
        if "/" in model:  # a litellm id names its provider first
            attributes["gen_ai.provider.name"] = model.split("/", 1)[0]
    return attributes


@contextmanager
def invoking(robot: str, model: str | None) -> Iterator[Any]:
    """``invoke_agent {robot}`` around one run's tool loop; set its usage with :func:`used`."""
    attributes = _genai("invoke_agent", model) | {"gen_ai.agent.name": robot}
    with tracing.tracer().start_as_current_span(f"invoke_agent {robot}", kind=_kind("INTERNAL"),
                                                attributes=attributes) as span:
        yield span


@contextmanager
def chatting(model: str | None) -> Iterator[Any]:
    """``chat {model}`` around one round trip to the model; set its usage with :func:`used`."""
    with tracing.tracer().start_as_current_span(f"chat {model or 'unknown'}", kind=_kind("CLIENT"),
                                                attributes=_genai("chat", model)) as span:
        yield span


def used(span: Any, input_tokens: int, output_tokens: int, cost: float | None = None,
         response_model: str | None = None) -> None:
    """Set the GenAI usage attributes (and robotlab's dollar cost, when known) on ``span``."""
    span.set_attribute("gen_ai.usage.input_tokens", input_tokens)
    span.set_attribute("gen_ai.usage.output_tokens", output_tokens)
    if cost is not None:
        span.set_attribute("robotlab.cost.usd", cost)
    if response_model:
        span.set_attribute("gen_ai.response.model", response_model)


@contextmanager
def executing(tool: str, call_id: str) -> Iterator[Any]:
    """``execute_tool {tool}`` around one tool call.

    A failure the model reads is marked with :func:`failed`.
    """
    attributes = _genai("execute_tool", None) | {"gen_ai.tool.name": tool,
                                                 "gen_ai.tool.call.id": call_id,
                                                 "gen_ai.tool.type": "function"}
    with tracing.tracer().start_as_current_span(f"execute_tool {tool}", kind=_kind("INTERNAL"),
                                                attributes=attributes) as span:
        yield span


def failed(span: Any, error: BaseException) -> None:
    """Mark ``span`` as failed with ``error`` (when the failure did not raise through it)."""
    _error(span, type(error).__name__, str(error))


@contextmanager
def step(name: str, attributes: dict[str, Any]) -> Iterator[Any]:
    """An ``INTERNAL`` span ``name``, current for the block.

    None (and nothing else) while tracing is off.

    It checks ``tracing.ENABLED`` itself: it wraps coarse work (a robot-to run, one iteration),
    where one check per block costs nothing worth saving at the call site.
    """
    if not tracing.ENABLED:
        yield None
        return
    # A robot-to run ends by raising StopRun even when it went well: the outcome is an attribute.
    with tracing.tracer().start_as_current_span(name, kind=_kind("INTERNAL"),
                                                attributes=attributes, record_exception=False,
                                                set_status_on_exception=False) as span:
        yield span


def annotate(span: Any, attributes: dict[str, Any]) -> None:
    """Set ``attributes`` on a :func:`step` span (None values skipped).

    A no-op for None (tracing off).
    """
    if span is not None:
        for key, value in attributes.items():
            if value is not None:
                span.set_attribute(key, value)
