"""CURVE keys: making and listing them, the broker's key check, and what clients see when
refused."""

from __future__ import annotations

import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
import zmq

from robotlab import bus
from robotlab.broker.serve import check_bind
from robotlab.bus import BrokerConfig, EmbeddedBroker, KeyConfig
from robotlab.bus.certificates import Grant, authorized_keys
from robotlab.bus.keys import list_keys, new_key
from robotlab.errors import BusError, ConfigError, PeerUnavailable


@pytest.fixture
def keys_dir(tmp_path: Path) -> Path:
    """A keys folder: the broker's key, bob's (may be only bob) and an admin key (any name)."""
    folder = tmp_path / "keys"
    new_key(folder, "broker", [])
    new_key(folder, "bob", ["bob"])
    new_key(folder, "admin", ["*"], roles=["robot", "admin"])
    return folder


@pytest.fixture
def keyed_broker(keys_dir: Path) -> Iterator[EmbeddedBroker]:
    """A broker with --keys on loopback TCP (CURVE does not run over inproc), on its own context:
    a context holds one ZAP handler."""
    context = zmq.Context()
    config = BrokerConfig(heartbeat=0.2, keys_dir=str(keys_dir))
    broker = EmbeddedBroker("tcp://127.0.0.1:0", config, context).start()
    yield broker
    broker.stop()
    context.term()


def test_new_key_writes_a_pair_with_a_private_secret_and_authorizes_it(keys_dir: Path) -> None:
    secret = keys_dir / "bob.key_secret"
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600
    assert 'robots = "bob"' in secret.read_text()
    assert (keys_dir / "authorized" / "bob.key").read_text() == (keys_dir / "bob.key").read_text()
    assert not (keys_dir / "authorized" / "broker.key").exists()
    public, _ = zmq.auth.load_certificate(keys_dir / "bob.key")
    assert authorized_keys(keys_dir)[public.decode()] == Grant(frozenset({"bob"}),
                                                               frozenset({"robot"}), owner="bob")


def test_new_key_refuses_to_overwrite_and_odd_names(keys_dir: Path) -> None:
    with pytest.raises(ConfigError, match="exists"):
        new_key(keys_dir, "bob", ["bob"])
    with pytest.raises(ConfigError, match="may hold only"):
        new_key(keys_dir, "../evil", ["*"])


def test_list_keys_shows_names_and_authorization(keys_dir: Path, tmp_path: Path) -> None:
    new_key(keys_dir, "carol", ["carol", "dave"], authorize=False)
    assert list_keys(keys_dir) == [
        {"name": "admin", "robots": "*", "roles": "admin,robot", "authorized": "yes",
         "secret": "here"},
        {"name": "bob", "robots": "bob", "roles": "robot", "authorized": "yes", "secret": "here"},
        {"name": "broker", "robots": "", "roles": "", "authorized": "broker", "secret": "here"},
        {"name": "carol", "robots": "carol,dave", "roles": "robot", "authorized": "no",
         "secret": "here"},
    ]


def test_loading_a_missing_key_says_how_to_make_one(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="robotlab keys new"):
        KeyConfig.load(tmp_path, "nobody")


def test_a_non_loopback_bind_is_allowed_with_keys_only() -> None:
    check_bind(BrokerConfig(bind="tcp://0.0.0.0:5555", keys_dir="/etc/robotlab/keys"))
    check_bind(BrokerConfig(bind="tcp://10.0.0.5:5555", insecure=True))
    with pytest.raises(ConfigError, match="--keys"):
        check_bind(BrokerConfig(bind="tcp://10.0.0.5:5555"))


def test_a_broker_with_keys_refuses_to_start_without_its_own_key(tmp_path: Path) -> None:
    context = zmq.Context()
    with pytest.raises(ConfigError, match="no broker key"):
        EmbeddedBroker("tcp://127.0.0.1:0", BrokerConfig(keys_dir=str(tmp_path)), context).start()
    context.term()


def test_authorized_keys_talk_and_the_broker_stamps_the_sender(keyed_broker: EmbeddedBroker,
                                                               keys_dir: Path) -> None:
    with bus.connect(keyed_broker.url, name="bob", keys=KeyConfig.load(keys_dir, "bob")) as bob, \
            bus.connect(keyed_broker.url, name="anyone",
                        keys=KeyConfig.load(keys_dir, "admin")) as admin:
        bob.on_message(lambda message: f"{message.sender} said {message.content}")
        assert admin.request("bob", "hi", timeout=5).content == "anyone said hi"


def test_a_name_the_key_does_not_allow_is_forbidden_at_once(keyed_broker: EmbeddedBroker,
                                                            keys_dir: Path) -> None:
    with pytest.raises(ConfigError, match=r"refused 'alice' \(forbidden\).*may use: bob"):
        bus.connect(keyed_broker.url, name="alice", keys=KeyConfig.load(keys_dir, "bob"), timeout=5)
    assert keyed_broker._broker.counters["error_forbidden"] == 1
    assert keyed_broker._broker.registry.instances("alice") == []


def test_an_unknown_key_never_gets_a_welcome(keyed_broker: EmbeddedBroker, keys_dir: Path,
                                             tmp_path: Path) -> None:
    stranger = tmp_path / "elsewhere"
    new_key(stranger, "eve", ["*"])
    (stranger / "broker.key").write_bytes((keys_dir / "broker.key").read_bytes())
    # at once, not after the minute given: no retry mends a refused key
    with pytest.raises(PeerUnavailable, match="refused this client's handshake: the broker "
                                              "refused this client's CURVE key"):
        bus.connect(keyed_broker.url, name="eve", keys=KeyConfig.load(stranger, "eve"), timeout=60)
    assert keyed_broker._broker.frames_in == 0  # the handshake failed before any frame


def test_a_client_without_keys_never_reaches_a_keyed_broker(keyed_broker: EmbeddedBroker) -> None:
    with pytest.raises(PeerUnavailable, match="refused this client's handshake: this broker "
                                              "requires CURVE keys and this client has none"):
        bus.connect(keyed_broker.url, name="bob", timeout=60)
    assert keyed_broker._broker.frames_in == 0


def test_new_key_refuses_an_unknown_role(keys_dir: Path) -> None:
    with pytest.raises(ConfigError, match="unknown role 'root'"):
        new_key(keys_dir, "carol", ["carol"], roles=["root"])


@pytest.mark.parametrize("op", ["ps", "stats", "dlq.list", "dlq.replay", "dlq.purge"])
def test_a_robot_key_may_not_use_admin_ops_and_an_admin_key_may(keyed_broker: EmbeddedBroker,
                                                                keys_dir: Path, op: str) -> None:
    # Given bob's robot key and an admin key on a keyed broker
    with bus.connect(keyed_broker.url, name="bob", keys=KeyConfig.load(keys_dir, "bob")) as bob, \
            bus.connect(keyed_broker.url, name="ops",
                        keys=KeyConfig.load(keys_dir, "admin")) as admin:
        # Then the robot key is refused every admin op, naming the fix
        with pytest.raises(BusError, match=f"forbidden: '{op}' needs an admin key"):
            bob.admin(op, dlq_id="dl-1")
        # And ping stays open, while the admin key may use the op (a missing letter is its only
        # complaint)
        assert bob.admin("ping")["peers"] == 2
        try:
            admin.admin(op, dlq_id="dl-none")
        except BusError as exc:
            assert "no dead letter" in str(exc)


def test_a_key_cannot_take_over_another_keys_live_instance(keyed_broker: EmbeddedBroker,
                                                           keys_dir: Path) -> None:
    new_key(keys_dir, "mallory", ["bob"])  # allowed the name bob, but not bob's connection
    keyed_broker._broker.guard.reload()  # what SIGHUP does
    with bus.connect(keyed_broker.url, name="bob", keys=KeyConfig.load(keys_dir, "bob")) as bob:
        with pytest.raises(PeerUnavailable,
                           match="conflict: instance .* belongs to another live connection"):
            bus.connect(keyed_broker.url, name="bob", instance=bob.instance,
                        keys=KeyConfig.load(keys_dir, "mallory"), timeout=1)
        keys = [p.key for p in keyed_broker._broker.registry.instances("bob")]
        assert keys == [bob._link.keys.public.decode()]


def test_a_member_without_a_key_of_its_name_uses_this_process_key(
        keyed_broker: EmbeddedBroker, keys_dir: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    # What a systemd unit gives a robotd: the keys folder's public files, and its own secret
    # key as a credential elsewhere, named by $ROBOT_LAB_KEY. A Robot built inside finds it.
    credential = tmp_path / "credentials" / "robotlab.key"
    credential.parent.mkdir()
    (keys_dir / "bob.key_secret").rename(credential)
    monkeypatch.setenv("ROBOT_LAB_KEYS", str(keys_dir))
    monkeypatch.setenv("ROBOT_LAB_KEY", str(credential))
    with bus.connect(keyed_broker.url, name="bob", timeout=5) as bob:
        assert bob.keys is not None and bob.connected
    # the process key is bob's, and bob's only
    with pytest.raises(ConfigError, match="refused 'carol'"):
        bus.connect(keyed_broker.url, name="carol", timeout=5)
    monkeypatch.delenv("ROBOT_LAB_KEY")
    with pytest.raises(ConfigError, match="no CURVE key for 'bob'"):
        bus.connect(keyed_broker.url, name="bob", timeout=5)
