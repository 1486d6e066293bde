"""The stats map a member reports for `ps`: what the client sends and when, what the broker
keeps."""

from __future__ import annotations

from typing import Any

from robotlab.broker.member_stats import KEYS_MAX, TEXT_MAX, member_stats
from robotlab.bus.member.heartbeat_stats import StatsReport
from robotlab.cli.ps_view import table_row, with_figures


def test_the_broker_keeps_short_keys_and_scalar_values_only() -> None:
    raw: dict[str, Any] = {"tokens_in": 12, "cost": 0.5, "status": "x" * 500, "k" * 40: 1,
                           "nested": {"a": 1},
                           "nan": float("nan"), "listed": [1], "flag": True, "none": None}
    kept = member_stats(raw)
    assert kept == {"tokens_in": 12, "cost": 0.5, "status": "x" * TEXT_MAX, "flag": True,
                    "none": None}
    assert len(member_stats({f"k{i}": i for i in range(40)})) == KEYS_MAX


def test_a_report_goes_with_every_heartbeat_and_early_only_when_it_changed() -> None:
    figures = {"tokens_in": 1}
    report = StatsReport()
    assert report.header(0.0) == {}  # no source: an empty heartbeat, as before
    report.source = lambda: dict(figures)
    assert report.changed(0.0)  # never sent
    assert report.header(0.0) == {"stats": {"tokens_in": 1}}
    figures["tokens_in"] = 2
    assert not report.changed(0.5)  # at most one report a second
    assert report.changed(1.0)
    assert report.header(1.0) == {"stats": {"tokens_in": 2}}
    assert not report.changed(2.5)  # unchanged: only the idle heartbeat carries it again
    assert report.header(2.6) == {"stats": {"tokens_in": 2}}


def test_a_failing_source_reports_its_failure_instead_of_breaking_the_link() -> None:
    report = StatsReport()
    report.source = lambda: {}["missing"]
    assert report.header(0.0) == {"stats": {"status": "stats failed: KeyError"}}


def test_ps_cells_say_unknown_for_an_unpriced_model_and_show_small_costs() -> None:
    row = {"name": "bob", "oldest": 3.21, "stats": {"tokens_in": 1200, "tokens_out": 34,
                                                    "cost": "unknown", "status": "running"}}
    cells = table_row(row)
    assert (cells["tokens"], cells["cost"], cells["status"], cells["oldest"]) == ("1,200 in / 34 "
                                                                                  "out", "unknown",
                                                                                "running", "3.2s")
    assert table_row({"stats": {"cost": 0.0000216}})["cost"] == "$0.000022"
    assert table_row({"stats": {"cost": 1.5}})["cost"] == "$1.5000"
    assert table_row({"stats": {}, "oldest": None})["cost"] is None  # nothing reported: "-", not $0
    assert with_figures(row)["tokens_in"] == 1200 and with_figures({"name": "x"}) == {"name": "x"}
