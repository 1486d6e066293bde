"""PID 1 of fresh namespaces: build a root no write can take back to the host, prove it, boot
systemd.

Run by :mod:`tests.system.machine` as ``unshare --mount --pid --cgroup --uts --ipc --fork
python -I isolated_root.py ...``, so this process is PID 1 of a new PID namespace, alone in a
new mount namespace. Standard library only: it runs before (and instead of) anything else.

Why each step (a systemd booted on the host's own root once ran ``systemd-tmpfiles --boot``
and emptied the machine's shared ``/tmp``):

1. ``mount --make-rprivate /`` before any other mount, then check that no mount of this
   namespace is still ``shared:``: nothing mounted or unmounted here propagates to the host.
2. An overlay whose only writable layer is a fresh tmpfs: the host's ``/`` is its read-only
   lower layer, so creating, changing or deleting any file of the merged root writes to
   memory only. Submounts of the host (its ``/proc``, ``/sys``, ``/dev``, other disks) are not
   part of an overlay of ``/``: the merged root shows their empty mount points.
3. The proof, before systemd exists: each canary (a file the host made in a folder of the
   test's, and one under the shared ``/tmp``) must be visible through the overlay, is then
   deleted with ``rm -rf`` of its folder through the overlay, and must be gone here. The host
   then checks that every canary is still on its disk, and only then sends ``go``. Only the
   canaries' own folders are deleted, so a broken overlay costs this test its canaries,
   never anyone's files.
4. Fresh tmpfs on ``/tmp``, ``/run``, ``/var/tmp``, ``/var/log`` (empty: nothing of the host's
   is there for a cleaner to find); ``/dev`` is a tmpfs with a few bound device nodes (no
   disks) and a pty as the console; ``/proc`` is this PID namespace's, with ``/proc/sys``
   read-only; ``/sys`` read-only; ``/sys/fs/cgroup`` a cgroup2 whose root is this cgroup
   namespace's (a cgroup the host made for this boot only).
5. The capabilities that act on the machine (modules, raw I/O, the clock, the network's
   configuration, audit) dropped from the bounding set, for systemd and every service.
6. ``pivot_root`` (the host's tree is then detached), ``/`` made shared among this
   namespace's own mounts (as systemd expects), and exec systemd with ``container=`` set,
   so it takes the container code paths (no kernel modules, no udev, no swap or loop
   devices at shutdown).

Protocol with the host: one line on ``--report FD`` (``prepared HOST_PID``, ``refused REASON``
when a step cannot be done here, ``unsafe REASON`` when a check of the isolation failed), one
line on ``--go FD`` (``go`` boots systemd; anything else, or end of file, exits 1).
"""

from __future__ import annotations

import argparse
import ctypes
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

DEVICES = ("null", "zero", "full", "random", "urandom", "tty")
FRESH_TMPFS = ("tmp", "run", "var/tmp", "var/log")
SYSTEMD = "/lib/systemd/systemd"
# Capabilities that act on the machine rather than on this root: kernel modules, raw I/O,
# the clock, the shared network's configuration (this boot keeps the host's network
# namespace), the kernel log, audit, suspend. Dropped from the bounding set before systemd
# starts, so neither it nor any service can use them. CAP_SYS_ADMIN and CAP_MKNOD stay: the
# units' sandboxing (private /dev, /tmp, mount namespaces) needs them.
DROPPED_CAPABILITIES = {
    "CAP_NET_ADMIN": 12, "CAP_SYS_MODULE": 16, "CAP_SYS_RAWIO": 17, "CAP_SYS_PACCT": 20,
    "CAP_SYS_BOOT": 22, "CAP_SYS_TIME": 25, "CAP_SYS_TTY_CONFIG": 26, "CAP_AUDIT_CONTROL": 30,
    "CAP_MAC_OVERRIDE": 32, "CAP_MAC_ADMIN": 33, "CAP_SYSLOG": 34, "CAP_WAKE_ALARM": 35,
    "CAP_BLOCK_SUSPEND": 36, "CAP_AUDIT_READ": 37,
}
PR_CAPBSET_DROP = 24
PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}
"""pivot_root(2)'s syscall number (the C library has no wrapper)."""
MNT_DETACH = 2


class Refused(Exception):
    """A step that cannot be done here: systemd is not started (the test skips)."""

    kind = "refused"


class Unsafe(Refused):
    """A check of the isolation failed: systemd is not started (the test fails)."""

    kind = "unsafe"


def mount(*args: str) -> None:
    done = subprocess.run(["mount", *args], capture_output=True, text=True, timeout=30)
    if done.returncode != 0:
        raise Refused(f"mount {' '.join(args)}: {done.stderr.strip()}")


def make_private() -> None:
    mount("--make-rprivate", "/")
    shared = [line for line in Path("/proc/self/mountinfo").read_text().splitlines()
              if " shared:" in line]
    if shared:
        raise Unsafe(f"a mount still propagates to the host after --make-rprivate: {shared[0]}")


def overlay_root(stage: Path) -> Path:
    """Mount a tmpfs on ``stage`` and the overlay (lower ``/``, upper on that tmpfs) at
    stage/root."""
    mount("-t", "tmpfs", "-o", "mode=0700", "robotlab-stage", str(stage))
    for part in ("upper", "work", "root"):
        (stage / part).mkdir()
    mount("-t", "overlay", "-o", f"lowerdir=/,upperdir={stage}/upper,workdir={stage}/work",
          "robotlab-root", str(stage / "root"))
    return stage / "root"


def delete_canaries(root: Path, canaries: list[str]) -> None:
    """``rm -rf`` each canary's folder through the overlay; each must have been there, and be
    gone."""
    for canary in canaries:
        seen = root / canary.lstrip("/")
        if not seen.is_file():
            raise Unsafe(f"the canary {canary} is not visible through the overlay: it does not "
                         "show the host's /")
        done = subprocess.run(["rm", "-rf", str(seen.parent)], capture_output=True, text=True,
                              timeout=30)
        if done.returncode != 0 or seen.parent.exists():
            raise Unsafe(f"rm -rf of {seen.parent} failed inside the overlay: "
                         f"{done.stderr.strip()}")


def api_filesystems(root: Path, console: str, shown: list[str]) -> None:
    for folder in FRESH_TMPFS:
        (root / folder).mkdir(parents=True, exist_ok=True)
        mount("-t", "tmpfs", "-o", "mode=1777" if "tmp" in folder else "mode=0755",
              "robotlab-" + folder.replace("/", "-"), str(root / folder))
    # The host's /tmp holds everyone's work: the fresh one must show none of it.
    if any((root / "tmp").iterdir()):
        raise Unsafe("the fresh /tmp is not empty")
    for path in shown:
        bind_read_only(Path(path), root / path.lstrip("/"))
    devices(root / "dev", console)
    mount("-t", "proc", "-o", "nosuid,nodev,noexec", "proc", str(root / "proc"))
    for path in ("proc/sys", "proc/sysrq-trigger"):
        if not (root / path).exists():  # a kernel without magic SysRq has no trigger
            continue
        mount("--bind", str(root / path), str(root / path))
        mount("-o", "remount,bind,ro", str(root / path))
    mount("-t", "sysfs", "-o", "ro,nosuid,nodev,noexec", "sysfs", str(root / "sys"))
    mount("-t", "cgroup2", "-o", "nosuid,nodev,noexec", "cgroup2", str(root / "sys/fs/cgroup"))


def bind_read_only(host: Path, inside: Path) -> None:
    """Show one host folder a fresh tmpfs covers (a checkout under /tmp that the crew runs
    from), read-only: the crew can read it and never write to the host through it."""
    if not host.is_dir():
        raise Refused(f"{host} is not a folder")
    inside.mkdir(parents=True, exist_ok=True)
    mount("--bind", str(host), str(inside))
    mount("-o", "remount,bind,ro", str(inside))


def devices(dev: Path, console: str) -> None:
    """A /dev with the harmless nodes only (no disks: nothing in here can reach the host's)."""
    mount("-t", "tmpfs", "-o", "mode=0755,nosuid", "robotlab-dev", str(dev))
    for name in DEVICES:
        (dev / name).touch()
        mount("--bind", f"/dev/{name}", str(dev / name))
    (dev / "console").touch()
    mount("--bind", console, str(dev / "console"))
    for folder in ("pts", "shm", "mqueue"):
        (dev / folder).mkdir()
    mount("-t", "devpts", "-o", "newinstance,ptmxmode=0666,mode=0620", "devpts", str(dev / "pts"))
    mount("-t", "tmpfs", "-o", "mode=1777,nosuid,nodev", "robotlab-shm", str(dev / "shm"))
    (dev / "ptmx").symlink_to("pts/ptmx")
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"),
                         ("stdout", "/proc/self/fd/1"), ("stderr", "/proc/self/fd/2")):
        (dev / name).symlink_to(target)


def drop_capabilities() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    for name, number in DROPPED_CAPABILITIES.items():
        if libc.prctl(PR_CAPBSET_DROP, number, 0, 0, 0) != 0:
            raise Refused(
                f"cannot drop {name} from the bounding set: {os.strerror(ctypes.get_errno())}")


def enter(root: Path) -> None:
    """Make ``root`` this namespace's root and detach the host's tree from it.

    pivot_root, not chroot: the kernel refuses a user namespace (the units' PrivateUsers=)
    to a chrooted process, and afterwards no path here leads to the host's files at all.
    """
    libc = ctypes.CDLL(None, use_errno=True)
    number = PIVOT_ROOT.get(platform.machine())
    if number is None:
        raise Refused(f"no pivot_root syscall number known for {platform.machine()}")
    os.chdir(root)
    # The old root is stacked on the new one (at "."): detaching "." then drops it.
    if libc.syscall(number, b".", b".") != 0 or libc.umount2(b".", MNT_DETACH) != 0:
        raise Refused(f"pivot_root into {root}: {os.strerror(ctypes.get_errno())}")
    os.chdir("/")
    # systemd in a container leaves propagation as it finds it, but LoadCredential= relies on
    # / being shared (it mounts the credentials in a child namespace). Shared with peers of
    # this namespace only: every mount here was made private to the host in step 1, so the
    # peer group this creates has no member outside.
    mount("--make-rshared", "/")


def install(tree: Path, root: Path) -> None:
    """Copy (never bind) the test's files into the root: what runs inside cannot write them back."""
    shutil.copytree(tree, root, symlinks=True, dirs_exist_ok=True)


def prepare(args: argparse.Namespace) -> Path:
    make_private()
    root = overlay_root(Path(args.stage))
    delete_canaries(root, args.canary)
    api_filesystems(root, args.console, args.show)
    install(Path(args.install), root)
    drop_capabilities()
    if not Path(root, SYSTEMD.lstrip("/")).exists():
        raise Refused(f"{SYSTEMD} is missing (Debian's systemd package)")
    return root


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stage", required=True,
                        help="an empty folder of the test's: the tmpfs goes there")
    parser.add_argument("--install", required=True,
                        help="a tree copied over the root (units, settings, keys)")
    parser.add_argument("--canary", action="append", default=[],
                        help="a host file that must survive")
    parser.add_argument("--console", required=True, help="a pty bound on /dev/console")
    parser.add_argument("--show", action="append", default=[],
                        help="a host folder under /tmp, /run, /var/tmp or /var/log to show "
                             "read-only")
    parser.add_argument("--report", type=int, required=True)
    parser.add_argument("--go", type=int, required=True)
    parser.add_argument("systemd_args", nargs="*")
    args = parser.parse_args()
    report = os.fdopen(args.report, "w", buffering=1)
    if os.getpid() != 1:
        report.write("unsafe not PID 1 of a new PID namespace\n")
        return 1
    host_pid = os.readlink("/proc/self")  # the host's /proc until this process mounts its own
    try:
        root = prepare(args)
    except Refused as exc:
        report.write(f"{exc.kind} {exc}\n")
        return 1
    report.write(f"prepared {host_pid}\n")
    if os.fdopen(args.go).readline().strip() != "go":
        return 1
    report.close()
    try:
        enter(root)
    except Refused as exc:
        print(f"isolated_root: {exc}", file=sys.stderr)
        return 1
    os.closerange(3, 1024)
    environment = {"container": "robotlab-test", "PATH": "/usr/sbin:/usr/bin:/sbin:/bin",
                   "LANG": "C.UTF-8"}
    os.execve(SYSTEMD, [SYSTEMD, *args.systemd_args], environment)
    return 1  # not reached: execve replaces this process or raises


if __name__ == "__main__":
    sys.exit(main())
