"""A systemd booted as PID 1 of fresh namespaces on a root no write can take back to the host.

:func:`boot` starts ``tests/system/isolated_root.py`` under ``unshare`` (new mount, PID,
cgroup, UTS and IPC namespaces; the network stays the host's, so the test reaches the broker
on a loopback port), waits until it has built and proved the isolated root, checks on the
host that the canaries it deleted inside are still here, and only then lets it exec systemd.
The :class:`Machine` it yields runs commands inside (``nsenter`` into every namespace and the
root of its PID 1: the host's own systemctl and systemd are never used), and on exit SIGKILLs the
namespace's PID 1, which kills everything in it.

Each step that cannot be done here skips the test with the reason; a canary that did not
survive fails it, and systemd never starts.
"""

from __future__ import annotations

import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.waiting import wait_until

ISOLATED_ROOT = Path(__file__).with_name("isolated_root.py")
PREPARE_TIMEOUT = 60.0
"""Seconds for the overlay, the canary proof and the copies (mostly waiting for a loaded disk)."""
BOOT_TIMEOUT = 60.0
CANARY_TEXT = "must survive\n"
TOOLS = ("unshare", "nsenter", "setpriv", "mount")
ENVIRONMENT = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8", "SYSTEMD_PAGER": "",
               "SYSTEMD_COLORS": "0"}


@dataclass
class Machine:
    """The booted systemd: its PID 1 as the host sees it, and commands run inside."""

    pid: int
    console: Path
    """What systemd and its services wrote on /dev/console (a pty read by the test)."""

    def run(self, *argv: str, timeout: float = 30.0,
            check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run ``argv`` inside: every namespace of PID 1 but the network's, and its root."""
        command = ["nsenter", "--target", str(self.pid), "--mount", "--uts", "--ipc", "--cgroup",
                   "--pid", "--root", "--wd", "--", *argv]
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                              env=ENVIRONMENT)
        if check and done.returncode != 0:
            raise AssertionError(
                f"{' '.join(argv)} exited {done.returncode} inside: {done.stdout}{done.stderr}")
        return done

    def show(self, unit: str, *properties: str) -> dict[str, str]:
        """``systemctl show -p ...`` of one unit, as a dict."""
        done = self.run("systemctl", "show", unit, *(f"--property={name}" for name in properties))
        return dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)

    def journal(self, unit: str) -> str:
        """Everything the journal holds from ``unit`` (the message only)."""
        return self.run("journalctl", "--no-pager", "--output=cat", "--unit", unit,
                        check=False).stdout


def missing_prerequisite() -> str | None:
    """Why systemd cannot be booted here, or None."""
    if os.geteuid() != 0:
        return "booting systemd in namespaces needs root (mount, unshare, cgroups)"
    absent = [tool for tool in TOOLS if shutil.which(tool) is None]
    if absent:
        return f"{', '.join(absent)} not installed (util-linux and mount; .ci/run installs them)"
    if not Path("/lib/systemd/systemd").exists():
        return ("/lib/systemd/systemd is not installed (Debian's systemd package; .ci/run installs "
                "it)")
    if "\toverlay\n" not in Path("/proc/filesystems").read_text():
        return ("the kernel has no overlayfs (modprobe overlay), so no root can keep the host's "
                "disk read-only")
    if cgroup2_mount() is None:
        return "no cgroup2 mounted (systemd needs a cgroup2 it may write)"
    return None


def cgroup2_mount() -> Path | None:
    """Where the host's cgroup2 hierarchy is mounted (/sys/fs/cgroup, or .../unified on a hybrid
    host)."""
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split(" - ")
        if len(fields) == 2 and fields[1].split()[0] == "cgroup2":
            return Path(fields[0].split()[4])
    return None


@contextmanager
def own_cgroup() -> Iterator[Path]:
    """A fresh cgroup2 below this process's: the booted systemd's cgroup namespace root."""
    mounted = cgroup2_mount()
    assert mounted is not None
    mine = next(line[3:] for line in Path("/proc/self/cgroup").read_text().splitlines()
                if line.startswith("0::"))
    cgroup = mounted / mine.lstrip("/") / f"robotlab-boot-{uuid.uuid4().hex[:8]}"
    try:
        cgroup.mkdir()
    except OSError as exc:
        pytest.skip(f"cannot make a cgroup for systemd under {cgroup.parent}: {exc}")
    try:
        yield cgroup
    finally:
        remove_cgroup(cgroup)


def remove_cgroup(cgroup: Path) -> None:
    """Kill what is left in ``cgroup`` and remove it with every cgroup systemd made below it."""
    if not cgroup.exists():
        return
    if (cgroup / "cgroup.kill").exists():
        (cgroup / "cgroup.kill").write_text("1")
    wait_until(lambda: "populated 0" in (cgroup / "cgroup.events").read_text(), timeout=30,
               message=f"every process of {cgroup} gone")
    for folder in sorted((p for p in cgroup.rglob("*") if p.is_dir()), key=lambda p: len(p.parts),
                         reverse=True):
        folder.rmdir()
    cgroup.rmdir()


@contextmanager
def canaries(tmp_path: Path) -> Iterator[list[Path]]:
    """One canary in the test's folder and one right under the shared temporary folder."""
    shared = Path(tempfile.gettempdir()) / f"sysd-canary-{uuid.uuid4().hex[:8]}"
    made = [tmp_path / "canary" / "canary", shared / "canary"]
    for canary in made:
        plant(canary)
    try:
        yield made
    finally:
        shutil.rmtree(shared, ignore_errors=True)


def plant(canary: Path) -> None:
    """A canary file in a folder of its own (the preparer deletes the whole folder)."""
    canary.parent.mkdir()
    canary.write_text(CANARY_TEXT)


def lost(planted: list[Path]) -> list[str]:
    """The canaries no longer on the host's disk as they were planted."""
    return [str(path) for path in planted if not path.is_file() or path.read_text() != CANARY_TEXT]


def copy_console(master: int, log: Path) -> threading.Thread:
    """Drain the console pty into ``log``: a console nobody reads would block systemd's writes."""
    def pump() -> None:
        with log.open("ab") as out:
            while True:
                try:
                    data = os.read(master, 65536)
                except OSError:  # EIO: the last writer (the namespace) is gone
                    return
                if not data:
                    return
                out.write(data)
                out.flush()

    thread = threading.Thread(target=pump, name="console", daemon=True)
    thread.start()
    return thread


def read_line(fd: int, timeout: float) -> str:
    """One line from the preparer, or "" when it exited or took longer than ``timeout``."""
    data = b""
    while not data.endswith(b"\n"):
        ready, _, _ = select.select([fd], [], [], timeout)
        if not ready:
            return ""
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        data += chunk
    return data.decode().strip()


# Units that would act on the machine (devices, kernel settings, clocks, terminals, mounts
# from /etc/fstab), or clean folders, and that nothing under test needs. In the isolated
# root they could only touch the overlay and tmpfs; masked all the same, so the boot does
# only what the test needs. journald stays: the units' logs are part of what is checked.
MASKED = (
    "systemd-tmpfiles-setup.service", "systemd-tmpfiles-setup-dev.service",
    "systemd-tmpfiles-clean.service", "systemd-tmpfiles-clean.timer", "systemd-udevd.service",
    "systemd-udevd-control.socket", "systemd-udevd-kernel.socket", "systemd-udev-trigger.service",
    "systemd-udev-settle.service", "systemd-remount-fs.service", "systemd-fsck-root.service",
    "systemd-journald-audit.socket", "systemd-journal-flush.service", "systemd-networkd.service",
    "systemd-networkd.socket", "systemd-resolved.service", "systemd-timesyncd.service",
    "systemd-logind.service", "systemd-pstore.service", "getty.target", "console-getty.service",
    "dbus.service", "dbus.socket", "systemd-initctl.socket", "swap.target", "timers.target",
    "cryptsetup.target", "veritysetup.target", "integritysetup.target",
)
KEPT = ("systemd-journald.service",)
UNIT_FOLDERS = (Path("/lib/systemd/system"), Path("/etc/systemd/system"))
GENERATOR_FOLDERS = (Path("/lib/systemd/system-generators"),
                     Path("/usr/lib/systemd/system-generators"))


def base_tree(tree: Path) -> None:
    """What every boot copies over the root: the masks, no generators, an empty /etc/fstab."""
    system = tree / "etc" / "systemd" / "system"
    system.mkdir(parents=True, exist_ok=True)
    wanted = {unit.name for folder in UNIT_FOLDERS
              for unit in folder.glob("sysinit.target.wants/*")}
    for name in sorted((set(MASKED) | wanted) - set(KEPT)):
        (system / name).symlink_to("/dev/null")
    # Generators turn /etc/fstab, /etc/init.d and the kernel command line into units; masked
    # by a /dev/null link of the same name in /etc (systemd.generator(7)).
    generators = tree / "etc" / "systemd" / "system-generators"
    generators.mkdir(parents=True)
    for name in sorted({path.name for folder in GENERATOR_FOLDERS for path in folder.glob("*")}):
        (generators / name).symlink_to("/dev/null")
    (tree / "etc" / "fstab").write_text("")


@contextmanager
def boot(tmp_path: Path, tree: Path, unit: str, planted: list[Path],
         shown: Sequence[str] = ()) -> Iterator[Machine]:
    """Boot systemd to ``unit`` on an isolated root with ``tree`` copied over it; yield it booted.

    ``planted`` are host files (:func:`canaries`) the preparer deletes through the overlay;
    ``shown`` are host folders the root's fresh /tmp (and the like) would hide, shown read-only.
    Skips when this host cannot do it (the reason says which step); fails, before systemd
    starts, when a canary was not visible inside or did not survive on the host.
    """
    reason = missing_prerequisite()
    if reason:
        pytest.skip(reason)
    stage = tmp_path / "stage"
    stage.mkdir()
    # the host keeps the slave open, so the pty outlives systemd's reopening
    master, slave = os.openpty()
    report_r, report_w = os.pipe()
    go_r, go_w = os.pipe()
    arguments = ["--stage", str(stage), "--install", str(tree), "--console", os.ttyname(slave),
                 "--report", str(report_w), "--go", str(go_r),
                 *(f"--canary={path}" for path in planted), *(f"--show={path}" for path in shown),
                 "--", f"--unit={unit}", "--show-status=no", "--log-target=journal-or-kmsg"]
    # (The namespace's /dev has no kmsg: systemd's own lines go to its journal or nowhere,
    # never to the host's kernel log.)
    with own_cgroup() as cgroup, (tmp_path / "namespace.log").open("w") as log:
        # Into the fresh cgroup before unshare, so it becomes the cgroup namespace's root. Each
        # link dies with its parent: the test (setpriv), then unshare (--kill-child).
        command = ["sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', str(cgroup),
                   "setpriv", "--pdeathsig", "KILL", "--",
                   "unshare", "--mount", "--pid", "--cgroup", "--uts", "--ipc", "--fork",
                   "--kill-child", "--", sys.executable, "-I", str(ISOLATED_ROOT), *arguments]
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log,
                                   stderr=subprocess.STDOUT, pass_fds=(report_w, go_r),
                                   env=ENVIRONMENT)
        os.close(report_w)
        os.close(go_r)
        pump = copy_console(master, tmp_path / "console.log")
        pid = None
        try:
            pid = handshake(report_r, go_w, planted, process, tmp_path / "namespace.log")
            machine = Machine(pid, tmp_path / "console.log")
            wait_until(lambda: booted(machine), timeout=BOOT_TIMEOUT, message="systemd booted")
            yield machine
        finally:
            shut_down(process, pid)
            for fd in (report_r, go_w, slave, master):
                os.close(fd)
            pump.join(timeout=5)


def handshake(report: int, go: int, planted: list[Path], process: subprocess.Popen[bytes],
              log: Path) -> int:
    """Wait for the prepared root, check the canaries on the host, then say go; PID 1's host pid."""
    line = read_line(report, PREPARE_TIMEOUT)
    kind, _, detail = line.partition(" ")
    if kind == "refused":
        pytest.skip(f"cannot build an isolated root here: {detail}")
    if kind == "unsafe":
        pytest.fail(f"the root is not isolated from the host, systemd not started: {detail}")
    if kind != "prepared":
        process.wait(timeout=10)
        output = log.read_text().strip()
        if "unshare failed" in output:
            pytest.skip(f"cannot make the namespaces here: {output.splitlines()[-1]}")
        if "cgroup.procs" in output:
            pytest.skip(f"cannot move into the cgroup made for systemd: {output.splitlines()[-1]}")
        pytest.fail(f"the namespace's PID 1 said {line!r} and exited {process.returncode}: "
                    f"{output}")
    gone = lost(planted)
    if gone:
        os.write(go, b"stop\n")
        pytest.fail(f"rm -rf inside the overlay reached the host ({', '.join(gone)}): systemd not "
                    "started")
    os.write(go, b"go\n")
    return int(detail)


def booted(machine: Machine) -> bool:
    """True once systemd answers and its start-up jobs are done."""
    try:
        state = machine.run("systemctl", "is-system-running", check=False,
                            timeout=10).stdout.strip()
    except subprocess.TimeoutExpired:
        return False
    return state in ("running", "degraded")


def shut_down(process: subprocess.Popen[bytes], pid: int | None) -> None:
    """SIGKILL the namespace's PID 1 (the kernel then kills every process in it), never a
    poweroff."""
    victim = pid if pid is not None else process.pid
    try:
        os.kill(victim, signal.SIGKILL)
    except ProcessLookupError:
        pass
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)
