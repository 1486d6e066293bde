"""The systemd units in deploy/: `systemd-analyze verify` accepts them, `security` rates each
service 2.5 or lower, and they say what the daemons rely on (notify, watchdog, credentials).

The units name the install location of deploy/README.md (/opt/robotlab/.venv); verify checks
that ExecStart exists, so the copies checked here point at this test run's environment.
.ci/run installs Debian's systemd package where systemd-analyze is missing.
"""

from __future__ import annotations

import configparser
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.process

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
INSTALLED_VENV = "/opt/robotlab/.venv"
SERVICES = {"robotlab-broker.service": "robotlab-broker.service",
            "robotd@.service": "robotd@bob.service"}


@pytest.fixture(scope="module")
def analyze() -> str:
    found = shutil.which("systemd-analyze")
    if found is None:
        pytest.skip("systemd-analyze is not installed (Debian's systemd package; .ci/run installs "
                    "it)")
    return found


@pytest.fixture
def units(tmp_path: Path) -> dict[str, Path]:
    """Each unit as systemd would load it (a template as one instance, keys drop-in merged),
    with ExecStart pointing at this environment's scripts."""
    venv = str(Path(sys.executable).parent.parent)
    assert Path(venv, "bin", "robotd").exists(), "install robotlab into the test environment first"
    copies = {}
    for source, name in [*SERVICES.items(), ("robotlab-crew.target", "robotlab-crew.target")]:
        text = (DEPLOY / source).read_text().replace(INSTALLED_VENV, venv)
        drop_in = DEPLOY / f"{source}.d" / "keys.conf"
        # a drop-in's [Service] lines add to the unit's, as systemd merges them
        if drop_in.exists():
            text += "\n" + drop_in.read_text()
        copies[name] = tmp_path / name
        copies[name].write_text(text)
    return copies


def settings(path: Path) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(strict=False, interpolation=None, delimiters=("=",))
    parser.optionxform = str  # systemd keys are case-sensitive
    parser.read_string(path.read_text())
    return parser


def test_systemd_analyze_verify_accepts_every_unit(analyze: str, units: dict[str, Path]) -> None:
    done = subprocess.run([analyze, "verify", "--man=no", *map(str, units.values())],
                          capture_output=True, text=True, timeout=60)
    ours = [line for line in (done.stdout + done.stderr).splitlines()
            if any(name in line for name in units)]
    assert done.returncode == 0 and not ours, done.stdout + done.stderr


@pytest.mark.parametrize("name", sorted(SERVICES.values()))
def test_each_service_rates_2_5_or_better(analyze: str, units: dict[str, Path], name: str) -> None:
    done = subprocess.run([analyze, "security", "--offline=yes", "--threshold=25",
                           str(units[name])],
                          capture_output=True, text=True, timeout=60)
    match = re.search(r"Overall exposure level for \S+: (\d+\.\d+)", done.stdout)
    assert match, done.stdout + done.stderr
    assert float(match.group(1)) <= 2.5 and done.returncode == 0, done.stdout


def test_units_wait_notify_drain_and_keep_secrets_apart() -> None:
    broker = settings(DEPLOY / "robotlab-broker.service")
    robot = settings(DEPLOY / "robotd@.service")
    for unit in (broker, robot):
        assert unit["Unit"]["Wants"].split()[0] == "network-online.target"
        assert "network-online.target" in unit["Unit"]["After"].split()
        service = unit["Service"]
        assert (service["Type"], service["NotifyAccess"],
                service["DynamicUser"]) == ("notify", "main", "yes")
        assert int(service["WatchdogSec"]) > 0 and int(service["LimitNOFILE"]) >= 4096
        assert service["RestartPreventExitStatus"] == "78" and service["Restart"] == "on-failure"
    assert broker["Service"]["RuntimeDirectory"] == "robotlab"
    assert int(broker["Service"]["LimitNOFILE"]) >= 10_000  # a crew of thousands of connections
    assert broker["Service"]["ExecReload"] == "/bin/kill -HUP $MAINPID"
    # Spawned robots and the fork server get SIGTERM too, and drain; not SIGKILL at once.
    assert robot["Service"]["KillMode"] == "control-group"
    # One dynamic user per instance: without User=, every robotd@ instance shares "robotd".
    assert robot["Service"]["User"] == "robotd-%i"
    robot_keys = settings(DEPLOY / "robotd@.service.d" / "keys.conf")["Service"]
    assert robot_keys["LoadCredential"] == "robot.key_secret:/etc/robotlab/keys/%i.key_secret"
    broker_keys = settings(DEPLOY / "robotlab-broker.service.d" / "keys.conf")["Service"]
    assert broker_keys["LoadCredential"] == "broker.key_secret:/etc/robotlab/keys/broker.key_secret"
