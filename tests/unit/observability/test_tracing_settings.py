"""Tracing's switch: which variables turn it on, what it refuses, and that off means no work at
all."""

from __future__ import annotations

import subprocess
import sys

import pytest

from robotlab.bus.wire.protocol import Command, check_header
from robotlab.errors import ConfigError, ProtocolError
from robotlab.observability import TraceSettings, setup, trace_settings


@pytest.mark.parametrize(("env", "exporters"), [
    ({}, ()),
    ({"OTEL_TRACES_EXPORTER": "none"}, ()),
    ({"OTEL_TRACES_EXPORTER": "otlp, Console"}, ("otlp", "console")),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, ("otlp",)),
    ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, ("otlp",)),
    ({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, ()),
    ({"OTEL_TRACES_EXPORTER": "console", "OTEL_SDK_DISABLED": "true"}, ()),
])
def test_the_standard_variables_name_the_exporters(env: dict[str, str],
                                                   exporters: tuple[str, ...]) -> None:
    settings = trace_settings(env)
    assert settings.exporters == exporters
    assert settings.enabled == bool(exporters)


def test_service_name_protocol_and_file_come_from_the_environment() -> None:
    settings = trace_settings({"OTEL_TRACES_EXPORTER": "jsonl", "OTEL_SERVICE_NAME": "crew-a",
                               "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
                               "ROBOT_LAB_TRACES_FILE": "/x/spans.jsonl"})
    assert (settings.service_name, settings.otlp_protocol,
            settings.traces_file) == ("crew-a", "grpc", "/x/spans.jsonl")
    assert trace_settings({}).otlp_protocol == "http/protobuf"


def test_the_wait_for_the_last_spans_at_exit_is_short_unless_set() -> None:
    assert trace_settings({}).exit_seconds == 0.08
    assert trace_settings({"ROBOT_LAB_TRACES_EXIT_SECONDS": "2.5"}).exit_seconds == 2.5
    for bad in ("soon", "-1", "nan"):
        with pytest.raises(ConfigError,
                           match="ROBOT_LAB_TRACES_EXIT_SECONDS must be a number of seconds"):
            trace_settings({"ROBOT_LAB_TRACES_EXIT_SECONDS": bad})


def test_no_exporter_sets_nothing_up() -> None:
    assert setup(TraceSettings(), "test") is False


@pytest.mark.parametrize(("settings", "says"), [
    (TraceSettings(exporters=("zipkin-json",)), "OTEL_TRACES_EXPORTER names 'zipkin-json'"),
    (TraceSettings(exporters=("jsonl",)), "needs ROBOT_LAB_TRACES_FILE=PATH"),
    (TraceSettings(exporters=("jsonl",), traces_file="/no/such/folder/spans.jsonl"),
     "cannot open it"),
])
def test_an_exporter_that_cannot_work_is_a_one_line_config_error(
        settings: TraceSettings, says: str) -> None:
    with pytest.raises(ConfigError, match=says) as caught:
        setup(settings, "test")
    assert "\n" not in str(caught.value)


def test_the_header_carries_a_trace_context_within_its_bounds() -> None:
    header = {"id": "a.1", "to": "bob", "traceparent": "00-" + "1" * 32 + "-" + "2" * 16 + "-01",
              "tracestate": "k=v"}
    check_header(Command.SEND, header)
    with pytest.raises(ProtocolError, match="'tracestate' must be a string of at most 512"):
        check_header(Command.SEND, {**header, "tracestate": "k=" + "v" * 600})


def test_with_tracing_off_a_round_trip_never_imports_opentelemetry() -> None:
    # A fresh interpreter: a round trip on an embedded broker, no OTEL_* variable set.
    code = (
        "import sys\n"
        "from robotlab import bus\n"
        "with bus.connect(None, name='a') as a, bus.connect(a.url, name='b', "
        "context=a._embedded.context) as b:\n    b.on_message(lambda m: m.content)\n    assert "
        "a.request('b', 'hi', timeout=10).content == 'hi'\nprint(sorted(m for m in sys.modules if "
        "m.startswith('opentelemetry')))\n"
    )
    env = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
