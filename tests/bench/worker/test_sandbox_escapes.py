"""The sandbox against a solution that looks for a way out (issue 29): the network and local sockets, what root
could do to the machine, inherited descriptors, resource limits. Each attack has its control beside it: the
same thing done from outside the sandbox works, so the test proves something."""

import errno
import glob
import os
import resource
import signal
import socket
import stat
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from helpers import child_env
from sandboxed import Reporter, outcome, run

from flashinfer_bench.bench.runner.cgroups import WorkerCgroup
from flashinfer_bench.bench.runner.worker_view import python_paths
from flashinfer_bench.bench.worker.sandbox import Isolation, ResourceLimits, SandboxPolicy
from flashinfer_bench.bench.worker.sandbox.view import DEV_NODES, GPU_NODES


def connect(family: int, address: object) -> str:
    with socket.socket(family) as client:
        client.settimeout(2)
        return outcome(lambda: client.connect(address))


def test_the_network_is_loopback_only_and_host_sockets_are_out_of_view(tmp_path):
    listeners = []
    for family, address in ((socket.AF_INET, ("127.0.0.1", 0)), (socket.AF_UNIX, f"\0fbx-{uuid.uuid4().hex}"),
                            (socket.AF_UNIX, str(tmp_path / "tmux"))):
        listener = socket.socket(family)
        listener.bind(address)
        listener.listen()
        listener.setblocking(False)
        listeners.append(listener)
    os.mkfifo(tmp_path / "fifo")
    targets = [(listener.family, listener.getsockname()) for listener in listeners]
    assert [connect(family, address) for family, address in targets] == ["ok"] * 3  # the control
    for listener in listeners:
        listener.accept()[0].close()

    def attack(isolation: Isolation, report: Reporter) -> None:
        with socket.socket() as server:  # its own loopback works
            server.bind(("127.0.0.1", 0))
            server.listen()
            loopback = connect(socket.AF_INET, server.getsockname())
        report({"applied": list(isolation.applied), "outside": [connect(f, a) for f, a in targets],
                "loopback": loopback, "fifo": outcome(lambda: os.open(tmp_path / "fifo", os.O_WRONLY | os.O_NONBLOCK)),
                "interfaces": sorted(name for _, name in socket.if_nameindex())})

    (report,), exitcode = run(SandboxPolicy(writable=(str(tmp_path / "scratch"),), confine_writes=True), attack,
                              before=lambda: (tmp_path / "scratch").mkdir())
    assert exitcode == 0
    assert "network namespace (loopback only)" in report["applied"]
    # TCP: nothing listens on its own loopback; abstract: another namespace's; the socket file: not in view.
    assert report["outside"] == ["ECONNREFUSED", "ECONNREFUSED", "ENOENT"]
    assert report["fifo"] == "ENOENT"
    assert report["loopback"] == "ok" and report["interfaces"] == ["lo"]
    for listener in listeners:
        with pytest.raises(BlockingIOError):
            listener.accept()
        listener.close()


def test_the_view_holds_no_device_but_the_listed_ones_and_no_host_directory(tmp_path):
    def attack(isolation: Isolation, report: Reporter) -> None:
        devices = {}
        for parent, _folders, files in os.walk("/dev"):
            for name in files:
                mode = os.lstat(os.path.join(parent, name)).st_mode
                if not stat.S_ISLNK(mode):
                    devices[os.path.join(parent, name)] = "char" if stat.S_ISCHR(mode) else oct(mode)
        report({"devices": devices, "root": sorted(os.listdir("/")),
                "others": {path: os.path.exists(path) for path in ("/run", "/var", "/home", "/root/.ssh", "/mnt")}})

    (report,), exitcode = run(SandboxPolicy(confine_writes=True), attack)
    assert exitcode == 0
    listed = {f"/dev/{name}" for name in DEV_NODES if os.path.exists(f"/dev/{name}")}
    gpu = {node for pattern in GPU_NODES for top in glob.glob(pattern)
           for node in ([top] if not os.path.isdir(top) else [os.path.join(top, n) for n in os.listdir(top)])}
    assert report["devices"] == {path: "char" for path in listed | gpu}  # the GPU's nodes where the host has them
    assert set(report["root"]) <= {"usr", "etc", "bin", "sbin", "lib", "lib64", "lib32", "libx32", "dev", "proc",
                                   "sys"}
    assert not any(report["others"].values())


def rewrite(path: str) -> None:
    """Write back the value a kernel setting has: no change even where the write went through."""
    value = Path(path).read_text()
    with open(path, "w") as handle:
        handle.write(value)


@pytest.mark.skipif(os.geteuid() != 0, reason="checks what uid 0 can do in the sandbox; run as root")
def test_root_changes_no_kernel_setting_and_reaches_no_device():
    core_pattern = "/proc/sys/kernel/core_pattern"
    hugepages = "/sys/kernel/mm/transparent_hugepage/enabled"
    assert os.access(core_pattern, os.W_OK)  # the control: outside, root may change it

    def attack(isolation: Isolation, report: Reporter) -> None:
        report({
            "uid": os.geteuid(),
            "core_pattern": outcome(lambda: rewrite(core_pattern)),
            "sys": outcome(lambda: rewrite(hugepages)) if os.path.exists(hugepages) else "absent",
            "sysrq": outcome(lambda: os.open("/proc/sysrq-trigger", os.O_WRONLY)),
            "kmsg": outcome(lambda: os.open("/dev/kmsg", os.O_WRONLY)),
            "kmsg exists": os.path.lexists("/dev/kmsg"),
            "mknod": outcome(lambda: os.mknod("/dev/shm/vda", stat.S_IFBLK | 0o600, os.makedev(254, 0))),
            "keys": Path("/proc/keys").read_text() if os.path.exists("/proc/keys") else "",
            "cgroups": os.listdir("/sys/fs/cgroup") if os.path.isdir("/sys/fs/cgroup") else [],
        })

    (report,), exitcode = run(SandboxPolicy(confine_writes=True), attack)
    assert exitcode == 0
    assert report["uid"] == 0  # still root by id: what root could do is out of its view or read-only
    assert report["core_pattern"] == "EROFS"
    assert report["sysrq"] == ("EROFS" if os.path.exists("/proc/sysrq-trigger") else "ENOENT")
    assert report["sys"] in ("EROFS", "absent")
    assert report["kmsg"] in ("ENOENT", "EROFS") and not report["kmsg exists"] and report["mknod"] == "EPERM"
    assert report["keys"] == "" and report["cgroups"] == []


def test_no_descriptor_is_inherited_but_the_kept_one():
    stray_read, stray_write = os.pipe()
    terminal = os.dup(1)

    def attack(isolation: Isolation, report: Reporter) -> None:
        from multiprocessing import resource_tracker

        held = {}
        for name in os.listdir("/proc/self/fd"):
            try:
                held[name] = os.readlink(f"/proc/self/fd/{name}")
            except FileNotFoundError:  # the listing's own descriptor, closed by now
                pass
        report({"applied": list(isolation.applied), "held": held,
                "tracker": resource_tracker._resource_tracker._fd})

    try:
        (inherited,), _ = run(SandboxPolicy(), attack)  # the control: without keep_fds, they are there
        policy = SandboxPolicy(keep_fds=())  # run() adds the report pipe below
        (kept,), exitcode = run(policy, attack, keep_report=True)
    finally:
        for fd in (stray_read, stray_write, terminal):
            os.close(fd)
    assert {str(stray_read), str(stray_write), str(terminal)} <= set(inherited["held"])
    assert exitcode == 0 and "no inherited descriptors" in kept["applied"]
    assert {fd: target for fd, target in kept["held"].items() if fd in ("0", "1", "2")} == dict.fromkeys(
        ("0", "1", "2"), "/dev/null")
    assert len(kept["held"]) == 4  # 0-2 and the report pipe
    assert kept["tracker"] is None


def test_rlimits_hold_and_cannot_be_raised(tmp_path):
    limits = ResourceLimits(open_files=32, file_size_bytes=1 << 20, cpu_seconds=2)

    def attack(isolation: Isolation, report: Reporter) -> None:
        opened = []

        def hog() -> None:
            while len(opened) < 100:
                opened.append(os.open("/dev/null", os.O_RDONLY))

        results = {"files": outcome(hog), "opened": len(opened)}
        for fd in opened:
            os.close(fd)
        results["write 2 MiB"] = outcome(lambda: (tmp_path / "scratch" / "big").write_bytes(b"x" * (2 << 20)))
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 1024))
            results["raise"] = "raised"
        except ValueError as error:  # Python's word for EPERM here
            results["raise"] = str(error)
        results["applied"] = list(isolation.applied)
        report(results)
        while True:  # spins until its CPU time is up
            pass

    (tmp_path / "scratch").mkdir()
    policy = SandboxPolicy(writable=(str(tmp_path / "scratch"),), confine_writes=True, limits=limits)
    reports, exitcode = run(policy, attack)
    assert len(reports) == 1, f"exit code {exitcode}"
    (report,) = reports
    assert "resource limits: open files 32, file size 1 MiB, CPU time 2 s" in report["applied"]
    assert report["files"] == "EMFILE" and report["opened"] < 32
    assert report["write 2 MiB"] == "EFBIG"
    assert report["raise"] == "not allowed to raise maximum limit"
    assert exitcode == -signal.SIGXCPU  # the waiter names the CPU-time kill
    assert limits.note_for(OSError(errno.EMFILE, "Too many open files")) == (
        "the worker ran into its open files limit (32)")


@pytest.fixture
def cgroup():
    limits = ResourceLimits(processes=16, memory_bytes=128 << 20)
    group = WorkerCgroup.create(limits)
    if group is None:
        pytest.skip("no cgroup can be made here (not root, and no pids and memory controllers delegated)")
    yield group
    group.remove()


def test_cgroup_limits_hold_for_every_process_of_the_namespace(cgroup):
    def attack(isolation: Isolation, report: Reporter) -> None:
        children = 0

        def bomb() -> None:
            nonlocal children
            while children < 100:
                if os.fork() == 0:
                    signal.pause()
                children += 1

        report({"applied": list(isolation.applied), "fork": outcome(bomb), "children": children,
                "escape": outcome(lambda: Path("/sys/fs/cgroup/pids/cgroup.procs").write_text(str(os.getpid())))})
        hog = bytearray(512 << 20)  # noqa: F841 - touched below, beyond the memory limit
        for offset in range(0, len(hog), 4096):
            hog[offset] = 1

    policy = SandboxPolicy(confine_writes=True, limits=cgroup.limits,
                           cgroups=tuple(map(str, cgroup.directories)))
    (report,), exitcode = run(policy, attack)
    assert "cgroup: processes 16, memory 128 MiB" in report["applied"]
    assert report["fork"] == "EAGAIN" and report["children"] < 16
    assert report["escape"] in ("ENOENT", "EROFS")
    assert exitcode == -signal.SIGKILL  # the memory hog was killed, and its namespace with it
    notes = cgroup.reached()
    assert notes == ["the worker reached its cgroup limit on processes 16: a fork or thread was refused",
                     "the worker reached its cgroup limit on memory 128 MiB: a process was killed"]
    assert cgroup.reached() == []  # counted once


#: What the unprivileged user runs: the sandbox's probe, printing what is missing.
UNPRIVILEGED_PROBE = """
import json, sys
from flashinfer_bench.bench.worker.sandbox import SandboxPolicy, probe_isolation
print(json.dumps(list(probe_isolation(SandboxPolicy(read_only=tuple(sys.argv[1:]), confine_writes=True)).missing)))
"""
#: Becomes nobody, then starts the probe as a program that user would start (a process that changed its ids is
#: not dumpable and its /proc files stay root's; exec makes it an ordinary process of its user).
UNPRIVILEGED_CHILD = f"""
import os, sys
os.setgroups([])
os.setgid(65534)
os.setuid(65534)
os.execv(sys.executable, [sys.executable, "-c", {UNPRIVILEGED_PROBE!r}, *sys.argv[1:]])
"""


def unprivileged_skip_reason() -> str | None:
    """Why this machine cannot run the sandbox as an unprivileged user (nobody, 65534), if it cannot."""
    if os.geteuid() != 0:
        return "needs root to switch to the unprivileged user"
    for path in (Path(sys.executable).resolve(), *Path(sys.executable).resolve().parents):
        if path.is_dir() and not path.stat().st_mode & stat.S_IXOTH:
            return f"Python lives under {path} (mode {oct(path.stat().st_mode & 0o777)}): nobody cannot run it"
    return None


@pytest.mark.skipif(unprivileged_skip_reason() is not None, reason=str(unprivileged_skip_reason()))
def test_an_unprivileged_user_gets_the_whole_sandbox():
    done = subprocess.run([sys.executable, "-c", UNPRIVILEGED_CHILD, *python_paths()], capture_output=True,
                          text=True, env=child_env(), timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_the_address_space_limit_makes_a_large_allocation_fail_with_its_name():
    limits = ResourceLimits(address_space_bytes=4 << 30)  # the CPU device's (CUDA reserves more than this)

    def attack(isolation: Isolation, report: Reporter) -> None:
        try:
            bytearray(8 << 30)
            report({"allocated": True})
        except MemoryError as error:
            report({"allocated": False, "note": limits.note_for(error)})

    (report,), exitcode = run(SandboxPolicy(limits=limits), attack)
    assert exitcode == 0
    assert report == {"allocated": False, "note": "the worker ran into its address space limit (4 GiB)"}


def test_cgroups_left_by_a_killed_cli_are_removed_by_the_next(cgroup):
    gone = subprocess.Popen(["true"])
    gone.wait()
    left = [directory.parent / f"fib-worker-{gone.pid}-0" for directory in cgroup.directories]
    for directory in left:
        directory.mkdir()
    fresh = WorkerCgroup.create(cgroup.limits)
    try:
        assert fresh is not None and not any(directory.exists() for directory in left)
        assert all(directory.exists() for directory in cgroup.directories)  # ours: its process still runs
    finally:
        if fresh is not None:
            fresh.remove()
        for directory in left:
            if directory.exists():
                directory.rmdir()
