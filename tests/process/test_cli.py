"""The `robotlab` and `robotd` commands, through click's CliRunner, against a real broker."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

from robotlab import bus
from robotlab.cli.robotlab_cli import main
from robotlab.robotd.command import robotd as robotd_main
from tests.waiting import wait_until

pytestmark = pytest.mark.process


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


def test_ps_lists_live_robots(runner: CliRunner, broker: str, start_robotd) -> None:
    bob = start_robotd("bob")
    result = runner.invoke(main, ["ps", "--broker", broker, "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    assert [(r["name"], r["pid"], r["state"]) for r in rows] == [("bob", bob.pid, "ready")]
    table = runner.invoke(main, ["ps", "--broker", broker])
    assert "bob" in table.output and "IN FLIGHT" in table.output


def test_traffic_lists_who_sent_what_to_whom(runner: CliRunner, broker: str,
                                            start_robotd) -> None:
    start_robotd("bob")
    with bus.connect(broker, name="asker", timeout=5) as client:
        client.send_request("bob", "hello").reply(30)
    result = runner.invoke(main, ["traffic", "--broker", broker, "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    assert [(r["from"], r["to"], r["type"], r["reply"]) for r in rows] == [
        ("asker", "bob", "request", False), ("bob", "asker", "reply", True)]
    refused = runner.invoke(main, ["traffic", "--broker", broker, "--last", "0"])
    assert refused.exit_code == 64 and "--last" in refused.output


def test_top_once_shows_the_ps_view_once(runner: CliRunner, broker: str, start_robotd) -> None:
    start_robotd("bob")
    result = runner.invoke(main, ["top", "--broker", broker, "--once"])
    assert result.exit_code == 0, result.output
    assert "1 member" in result.output and "bob" in result.output and "TOKENS" in result.output
    refused = runner.invoke(main, ["top", "--broker", broker, "--interval", "0"])
    assert refused.exit_code == 64 and "--interval" in refused.output


def test_send_waits_for_the_reply(runner: CliRunner, broker: str, start_robotd) -> None:
    bob = start_robotd("bob")
    result = runner.invoke(main, ["send", "--to", "bob", "--broker", broker, "--wait", "hello"])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == f"hello (from {bob.pid})"


def test_send_to_a_missing_robot_exits_69_and_is_dead_lettered(runner: CliRunner,
                                                               broker: str) -> None:
    result = runner.invoke(main, ["send", "--to", "ghost", "--broker", broker, "boo"])
    assert result.exit_code == 69
    assert "undeliverable: no live robot named 'ghost'" in result.output
    listed = runner.invoke(main, ["dlq", "list", "--broker", broker, "--json"])
    rows = json.loads(listed.output)
    assert ([(r["reason"], r["to"], r["content"]) for r in rows]
            == [("undeliverable", "ghost", "boo")])


def test_send_times_out_with_75(runner: CliRunner, broker: str, start_robotd) -> None:
    start_robotd("sloth", "handlers:hang")
    result = runner.invoke(main, ["send", "--to", "sloth", "--broker", broker, "--wait",
                                  "--timeout", "0.5", "x"])
    assert result.exit_code == 75
    assert "still in flight to sloth" in result.output


def test_dlq_replay_delivers_once_the_robot_exists(runner: CliRunner, broker: str,
                                                   start_robotd) -> None:
    runner.invoke(main, ["send", "--to", "late", "--broker", broker, "early"])
    dlq_id = _letters(runner, broker)[0]["dlq_id"]
    start_robotd("late")
    replayed = runner.invoke(main, ["dlq", "replay", dlq_id, "--broker", broker])
    assert replayed.exit_code == 0, replayed.output
    assert f"{dlq_id} delivered" in replayed.output
    # The replayed letter is gone, and late's reply to the `robotlab send` that said BYE long
    # ago is dropped (counted), not held and dead-lettered: nobody waits for it.
    wait_until(lambda: _stats(broker)["replies_dropped"] == 1, timeout=10,
               message="the reply dropped")
    assert _letters(runner, broker) == []


def _letters(runner: CliRunner, broker: str) -> list[dict]:
    """The dead letters ``robotlab dlq list --json`` prints."""
    return json.loads(runner.invoke(main, ["dlq", "list", "--broker", broker, "--json"]).output)


def _stats(broker: str) -> dict:
    with bus.connect(broker, name="test-stats", timeout=2) as client:
        return client.admin("stats")


def test_a_dead_letter_whose_work_may_have_run_is_replayed_only_when_forced(
        runner: CliRunner, broker: str, start_robotd) -> None:
    sloth = start_robotd("sloth", "handlers:hang")
    sent = runner.invoke(main, ["send", "--to", "sloth", "--broker", broker, "--timeout", "0.5",
                                "charge the card"])
    assert sent.exit_code == 75, sent.output  # in flight, never acked
    sloth.popen.kill()  # kill -9 mid-work: whether the card was charged, nobody knows
    rows = wait_until(lambda: _letters(runner, broker),
                      timeout=30, message="the silent robot's message dead-lettered")
    assert [(r["reason"], r["to"], r["maybe_ran"]) for r in rows] == [("timeout", "sloth", True)]
    start_robotd("sloth", "handlers:echo")
    refused = runner.invoke(main, ["dlq", "replay", rows[0]["dlq_id"], "--broker", broker])
    assert refused.exit_code == 69
    assert "may have run already" in refused.output and "--force" in refused.output
    forced = runner.invoke(main, ["dlq", "replay", rows[0]["dlq_id"], "--broker", broker,
                                  "--force"])
    assert forced.exit_code == 0, forced.output


def test_dlq_purge_needs_an_id_or_all(runner: CliRunner, broker: str) -> None:
    runner.invoke(main, ["send", "--to", "ghost", "--broker", broker, "x"])
    assert runner.invoke(main, ["dlq", "purge", "--broker", broker]).exit_code == 64
    purged = runner.invoke(main, ["dlq", "purge", "--all", "--broker", broker])
    assert purged.exit_code == 0 and "purged 1" in purged.output


def test_broker_refuses_a_public_bind_without_keys(runner: CliRunner) -> None:
    result = runner.invoke(main, ["broker", "--bind", "tcp://0.0.0.0:5599"])
    assert result.exit_code == 78
    assert "refusing to bind tcp://0.0.0.0:5599" in result.output and "--insecure" in result.output


def test_broker_rejects_a_malformed_address(runner: CliRunner) -> None:
    result = runner.invoke(main, ["broker", "--bind", "http://localhost:80"])
    assert result.exit_code == 78
    assert ("'http://localhost:80' is not a broker address: one looks like tcp://HOST:PORT"
            in result.output)


def test_robotd_with_a_bad_handler_exits_78(runner: CliRunner, broker: str) -> None:
    result = runner.invoke(robotd_main, ["--name", "x", "--broker", broker, "--handler",
                                         "no_such_module:f"])
    assert result.exit_code == 78
    assert "cannot import handler module 'no_such_module'" in result.output


def test_a_handler_only_robotd_that_cannot_load_its_handler_says_so_in_one_line_and_exits_78(
        broker: str) -> None:
    argv = [sys.executable, "-m", "robotlab.robotd", "--name", "x", "--broker", broker, "--handler",
            "no_such_module:f"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    assert done.returncode == 78
    assert done.stderr.splitlines()[-1] == ("python -m robotlab.robotd: cannot import handler "
                                            "module 'no_such_module': No module named "
                                            "'no_such_module'")


def test_robotd_given_a_connect_timeout_and_no_broker_exits_75(tmp_path) -> None:
    argv = [sys.executable, "-m", "robotlab.robotd", "--name", "x", "--broker",
            f"ipc://{tmp_path}/none.sock", "--handler", "json:dumps", "--connect-timeout", "0.5"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    assert done.returncode == 75
    assert "no broker answered" in done.stderr


def test_a_second_broker_on_a_live_ipc_path_is_refused(runner: CliRunner, broker: str) -> None:
    result = runner.invoke(main, ["broker", "--bind", broker])
    assert result.exit_code == 78
    assert "another broker is listening there" in result.output


def test_the_commands_refuse_an_inproc_address_at_once(runner: CliRunner) -> None:
    for argv in (["ps"], ["top", "--once"], ["send", "--to", "bob", "hi"], ["dlq", "list"]):
        result = runner.invoke(main, [*argv, "--broker", "inproc://crew"])
        assert result.exit_code == 78, result.output
        assert len(result.output.strip().splitlines()) == 1, result.output
        assert result.output.strip().endswith(": inproc://crew is an in-process address: give the "
                                              "broker's tcp:// or ipc:// address")


def test_a_negative_timeout_is_refused(runner: CliRunner) -> None:
    for argv in (["send", "--to", "bob", "--timeout", "-1", "hi"],
                 ["dlq", "replay", "dl-1", "--timeout", "-1"]):
        result = runner.invoke(main, argv)
        assert result.exit_code == 64, result.output
        assert "-1" in result.output and ">=0" in result.output.replace(" ", ""), result.output


def test_send_json_prints_json_and_json_content_sends_data(runner: CliRunner, broker: str,
                                                           start_robotd) -> None:
    bob = start_robotd("bob")
    replied = runner.invoke(main, ["send", "--to", "bob", "--broker", broker, "--wait", "--json",
                                   "hi"])
    assert replied.exit_code == 0, replied.output
    assert json.loads(replied.output) == {"from": "bob", "content": f"hi (from {bob.pid})"}
    delivered = runner.invoke(main, ["send", "--to", "bob", "--broker", broker, "--json",
                                     "--json-content", '{"n": 3}'])
    assert delivered.exit_code == 0, delivered.output
    assert len(json.loads(delivered.output)["delivered_to"]) == 1
    bad = runner.invoke(main, ["send", "--to", "bob", "--broker", broker, "--json-content",
                               "{nope"])
    assert bad.exit_code == 64 and "not JSON" in bad.output


def test_replaying_an_unknown_dead_letter_says_so_plainly(runner: CliRunner, broker: str) -> None:
    result = runner.invoke(main, ["dlq", "replay", "dl-999", "--broker", broker])
    assert result.exit_code == 69, result.output
    assert result.output.strip().endswith(": no dead letter 'dl-999'"), result.output


def test_tables_cut_nothing_when_not_on_a_terminal(runner: CliRunner, broker: str) -> None:
    long = "x" * 300
    runner.invoke(main, ["send", "--to", "ghost", "--broker", broker, long])
    table = runner.invoke(main, ["dlq", "list", "--broker", broker])
    assert table.exit_code == 0 and long in table.output, table.output


def test_robotd_says_its_version(runner: CliRunner) -> None:
    result = runner.invoke(robotd_main, ["--version"])
    assert result.exit_code == 0 and "version" in result.output


def test_a_robot_hosted_without_serve_warns_at_start(processes, broker: str) -> None:
    from tests.waiting import wait_until

    argv = [sys.executable, "-m", "robotlab.robotd", "--name", "quiet", "--broker", broker,
            "--system-prompt", "hi"]
    proc = processes.start(argv, name="robotd-quiet")
    wait_until(lambda: "without --serve" in proc.output() or proc.popen.poll() is not None,
               timeout=60, message="the warning")
    assert "it acks messages but never runs or answers them; pass --serve" in proc.output()
