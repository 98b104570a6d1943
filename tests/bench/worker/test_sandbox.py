"""The worker sandbox against hostile code, with real processes and the real kernel.

Each test forks a child that enters the sandbox over temporary directories, attacks, and reports what
happened as JSON lines over a pipe; the test checks the reports and what it sees from outside."""

import ctypes
import errno
import os
import resource
import signal
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from helpers import gone, processes_named
from sandboxed import (
    GONE_TIMEOUT_S,
    LIBC,
    Reporter,
    enter_and_attack,
    fork,
    libc_call,
    outcome,
    read_reports,
    reap,
    run,
    start,
)

from flashinfer_bench.bench.worker.sandbox import (
    Isolation,
    SandboxPolicy,
    enter,
    privileges,
    probe_isolation,
    syscalls,
    terminate_sandboxed,
)
from flashinfer_bench.bench.worker.sandbox.waiter import WAITER_KEPT_FD

PR_SET_PDEATHSIG = 1
PR_SET_NAME = 15
MS_REMOUNT = 0x20
MS_BIND = 0x1000
MNT_DETACH = 2
NEW_USER_AND_MOUNT_NAMESPACES = syscalls.CLONE_NEWUSER | syscalls.CLONE_NEWNS
FULL_ISOLATION = ("user namespace", "pid namespace", "mount namespace", "ipc namespace", "private /proc",
                  "network namespace (loopback only)", "own session", "no capabilities", "no new privileges",
                  "dies with its parent")
#: What ``confine_writes`` adds: the view and its parts.
VIEW = ("file system view", "writable: scratch only", "minimal /dev", "private /dev/shm", "read-only /proc/sys",
        "read-only /sys")



def set_name(name: str) -> None:
    LIBC.prctl(PR_SET_NAME, name.encode(), 0, 0, 0)


def clear_pdeathsig() -> None:
    LIBC.prctl(PR_SET_PDEATHSIG, 0, 0, 0, 0)


def leave_children_behind(marker: str, report: Reporter) -> None:
    """Start a child ("<marker>g") that stays, and a detached one ("<marker>d": double fork, setsid, no
    PDEATHSIG); each reports once it carries its name, then sleeps."""
    if fork() == 0:
        try:
            set_name(marker + "g")
            if fork() == 0:
                os.setsid()
                if fork() == 0:
                    clear_pdeathsig()
                    set_name(marker + "d")
                    report({"started": "d"})
                    time.sleep(60)
                os._exit(0)
            report({"started": "g"})
            time.sleep(60)
        finally:
            os._exit(0)


def pid_named(marker: str, suffix: str) -> int:
    (pid,) = [pid for pid, name in processes_named(marker).items() if name == suffix]
    return pid


def parent_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[1])


def wait_for(condition: Callable[[], bool], timeout: float = GONE_TIMEOUT_S) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def all_gone(marker: str, *pids: int) -> bool:
    """Whether ``pids`` and every process named with ``marker`` end (soon)."""
    return wait_for(lambda: all(gone(pid) for pid in [*pids, *processes_named(marker)]))


@pytest.fixture
def marker() -> Iterator[str]:
    """A process-name prefix unique to the test; whatever still carries it afterwards is killed."""
    name = f"fbx{uuid.uuid4().hex[:8]}"
    yield name
    for pid in processes_named(name):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def start_hostile_worker(marker: str, policy: SandboxPolicy | None = None, before: Callable[[], None] | None = None,
                         ignore_sigterm: bool = True) -> tuple[int, int, list]:
    """A sandboxed worker ("<marker>w") that clears its PDEATHSIG, ignores SIGTERM (if asked to) and leaves
    children behind.

    Returns the waiter's pid, the reports' read end and the reports so far (isolation, then started ones)."""
    def attack(isolation: Isolation, report: Reporter) -> None:
        clear_pdeathsig()
        if ignore_sigterm:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        set_name(marker + "w")
        report({"applied": isolation.applied, "missing": isolation.missing, "pid": os.getpid()})
        leave_children_behind(marker, report)
        report({"started": "w"})
        time.sleep(60)

    pid, fd = start(policy or SandboxPolicy(), attack, before)
    return pid, fd, read_reports(fd, count=4)


# --- files -----------------------------------------------------------------------------------------------


def test_read_only_paths_reject_every_write_and_cannot_be_made_writable_again(tmp_path):
    tree = tmp_path / "trace_set"
    (tree / "sub").mkdir(parents=True)
    (tree / "mnt").mkdir()
    (tree / "f").write_text("original")
    single = tmp_path / "definition.json"
    single.write_text("original")
    writable = tmp_path / "rw"
    writable.mkdir()

    def before() -> None:
        # A mount below the read-only tree (in a namespace of the child's own), which must be read-only too;
        # and the current directory inside the tree, which must not keep a way around the new mounts.
        uid, gid = os.geteuid(), os.getegid()
        syscalls._unshare(syscalls.CLONE_NEWUSER | syscalls.CLONE_NEWNS)
        privileges._map_ids(uid, gid)
        syscalls._mount("tmpfs", str(tree / "mnt"), "tmpfs", 0)
        os.chdir(tree)

    def remount() -> None:
        libc_call(LIBC.mount(None, str(tree).encode(), None, MS_REMOUNT | MS_BIND, None))

    def unmount() -> None:
        libc_call(LIBC.umount2(str(tree).encode(), MNT_DETACH))

    def attack(isolation: Isolation, report: Reporter) -> None:
        f = tree / "f"
        attempts = {
            "write": lambda: open(f, "w"),
            "append": lambda: open(f, "a"),
            "create": lambda: open(tree / "new", "x"),
            "create in cwd": lambda: open("relative", "x"),
            "create below a mount": lambda: open(tree / "mnt" / "new", "x"),
            "create in a subdirectory": lambda: open(tree / "sub" / "new", "x"),
            "mkdir": lambda: os.mkdir(tree / "dir"),
            "rename": lambda: os.rename(f, tree / "g"),
            "unlink": lambda: os.unlink(f),
            "rmdir": lambda: os.rmdir(tree / "sub"),
            "truncate": lambda: os.truncate(f, 0),
            "chmod": lambda: os.chmod(f, 0o777),
            "symlink": lambda: os.symlink("/etc/passwd", tree / "link"),
            "write a read-only file": lambda: open(single, "w"),
            "remount read-write": remount,
            "unmount": unmount,
            "rename out": lambda: os.rename(f, writable / "f"),
            # The same again from a new user namespace, where the process has every capability once more.
            "new user namespace": lambda: libc_call(LIBC.unshare(syscalls.CLONE_NEWUSER | syscalls.CLONE_NEWNS)),
            "remount there": remount,
            "unmount there": unmount,
            "write there": lambda: open(f, "w"),
        }
        results = {name: outcome(action) for name, action in attempts.items()}
        results["writable sibling"] = outcome(lambda: (writable / "new").write_text("fine"))
        results["/tmp"] = outcome(lambda: open(f"/tmp/{uuid.uuid4().hex}", "x").close())
        report({"complete": isolation.complete, "results": results})

    reports, exitcode = run(SandboxPolicy(read_only=(str(tree), str(single))), attack, before)
    assert exitcode == 0
    (report,) = reports
    assert report["complete"]
    results = report["results"]
    refused = {name for name, result in results.items() if result == "EROFS"}
    assert refused == {"write", "append", "create", "create in cwd", "create below a mount",
                       "create in a subdirectory", "mkdir", "rename", "unlink", "rmdir", "truncate", "chmod",
                       "symlink", "write a read-only file", "write there"}
    assert results["rename out"] in ("EXDEV", "EROFS")
    assert results["remount read-write"] == "EPERM"
    assert results["unmount"] == "EPERM"
    assert results["new user namespace"] == "ok"  # allowed, but gives nothing back:
    assert results["remount there"] == "EPERM"
    assert results["unmount there"] in ("EINVAL", "EPERM")
    assert results["writable sibling"] == "ok"
    assert results["/tmp"] == "ok"
    assert sorted(p.name for p in tree.iterdir()) == ["f", "mnt", "sub"]
    assert (tree / "f").read_text() == "original" and single.read_text() == "original"
    assert list((tree / "mnt").iterdir()) == [] and list((tree / "sub").iterdir()) == []
    assert (writable / "new").read_text() == "fine"


def test_hidden_directory_shows_nothing_and_its_socket_cannot_be_reached(tmp_path):
    hidden = tmp_path / "hidden"
    hidden.mkdir()
    (hidden / "secret").write_text("forkserver")
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(hidden / "listener"))
    listener.listen()
    listener.setblocking(False)

    def attack(isolation: Isolation, report: Reporter) -> None:
        client = socket.socket(socket.AF_UNIX)
        report({
            "complete": isolation.complete,
            "listing": os.listdir(hidden),
            "read": outcome(lambda: (hidden / "secret").read_text()),
            "connect": outcome(lambda: client.connect(str(hidden / "listener"))),
            "create": outcome(lambda: open(hidden / "new", "x")),
        })

    reports, exitcode = run(SandboxPolicy(hidden=(str(hidden),)), attack)
    assert exitcode == 0
    assert reports == [{"complete": True, "listing": [], "read": "ENOENT", "connect": "ENOENT", "create": "EROFS"}]
    with pytest.raises(BlockingIOError):
        listener.accept()  # nobody got through
    listener.close()
    assert sorted(p.name for p in hidden.iterdir()) == ["listener", "secret"]


def shm_listing() -> list[str]:
    return sorted(os.listdir("/dev/shm"))


def remount_read_write(path: Path | str) -> None:
    libc_call(LIBC.mount(None, str(path).encode(), None, MS_REMOUNT | MS_BIND, None))


def test_confined_writes_reach_only_the_writable_directory(tmp_path):
    scratch, other, code = tmp_path / "scratch", tmp_path / "other", tmp_path / "code"
    for directory in (scratch, other, code / "sub", code / "hidden"):
        directory.mkdir(parents=True)
    (code / "hidden" / "secret").write_text("forkserver")
    existing = other / "existing"
    existing.write_text("original")
    outside_shm = Path("/dev/shm") / f"fbx-outside-{uuid.uuid4().hex}"
    inside_shm = f"fbx-inside-{uuid.uuid4().hex}"
    outside_shm.write_text("host")

    def writable_steps() -> dict[str, str]:
        steps = {
            "create": lambda: (scratch / "a").write_text("a"),
            "append": lambda: open(scratch / "a", "a").write("b"),
            "mkdir": lambda: os.mkdir(scratch / "d"),
            "create below": lambda: (scratch / "d" / "f").write_text("f"),
            "rename": lambda: os.rename(scratch / "a", scratch / "d" / "b"),
            "unlink": lambda: os.unlink(scratch / "d" / "f"),
            "keep": lambda: (scratch / "kept").write_text("kept"),
        }
        return {name: outcome(action) for name, action in steps.items()}

    def attack(isolation: Isolation, report: Reporter) -> None:
        elsewhere = {
            "another tmp dir": lambda: open(other / "new", "x"),
            "an existing file": lambda: open(existing, "a"),
            "rename out of scratch": lambda: os.rename(scratch / "kept", other / "kept"),
            "home": lambda: open(Path.home() / f"fbx-{uuid.uuid4().hex}", "x"),
            "/tmp": lambda: open(f"/tmp/fbx-{uuid.uuid4().hex}", "x"),
            "cwd (read-only path)": lambda: open("relative", "x"),
            "mkdir in /": lambda: os.mkdir(f"/fbx-{uuid.uuid4().hex}"),
            "remount / read-write": lambda: remount_read_write("/"),
            "remount scratch": lambda: remount_read_write(scratch),
            "/dev/null": lambda: open(os.devnull, "w").write("discarded"),
            "create in /dev": lambda: open("/dev/fbx", "x"),
            "shm": lambda: (Path("/dev/shm") / inside_shm).write_text("inside"),
            "new user namespace": lambda: libc_call(LIBC.unshare(NEW_USER_AND_MOUNT_NAMESPACES)),
            "remount / there": lambda: remount_read_write("/"),
            "write there": lambda: open(code / "new", "x"),
        }
        shm_before = shm_listing()
        results = {**writable_steps(), **{name: outcome(action) for name, action in elsewhere.items()}}
        report({"applied": isolation.applied, "missing": isolation.missing, "results": results,
                "shm before": shm_before, "shm after": shm_listing(),
                "hidden": os.listdir(code / "hidden")})
        time.sleep(60)  # the test looks at /dev/shm while the namespace lives, then ends it

    policy = SandboxPolicy(read_only=(str(code),), hidden=(str(code / "hidden"),), writable=(str(scratch),),
                           confine_writes=True)
    try:
        waiter, fd = start(policy, attack, before=lambda: os.chdir(code / "sub"))
        try:
            (report,) = read_reports(fd, count=1)
            assert not (Path("/dev/shm") / inside_shm).exists()  # its /dev/shm is its own
        finally:
            terminate_sandboxed(waiter)
            reap(waiter)
            os.close(fd)
    finally:
        outside_shm.unlink()
    assert report["missing"] == []
    assert {"file system view", "writable: scratch only", "private /dev/shm", "minimal /dev",
            "hidden paths"} <= set(report["applied"])
    results = report["results"]
    succeeded = {name for name, result in results.items() if result == "ok"}
    assert succeeded == {"create", "append", "mkdir", "create below", "rename", "unlink", "keep", "/dev/null",
                         "shm", "new user namespace"}
    refused = {name for name, result in results.items() if result == "EROFS"}
    assert refused == {"/tmp", "cwd (read-only path)", "mkdir in /", "create in /dev", "write there"}
    # Not in the view at all: the other directory, its file, the home directory.
    assert {name for name, result in results.items() if result == "ENOENT"} == {
        "another tmp dir", "an existing file", "rename out of scratch", "home"}
    remounts = ("remount / read-write", "remount scratch", "remount / there")
    assert {results[name] for name in remounts} == {"EPERM"}
    assert report["shm before"] == [] and report["shm after"] == [inside_shm]
    assert report["hidden"] == []
    assert sorted(p.name for p in scratch.rglob("*")) == ["b", "d", "kept"]
    assert (scratch / "d" / "b").read_text() == "ab"
    assert sorted(p.name for p in other.iterdir()) == ["existing"] and existing.read_text() == "original"
    assert list((code / "sub").iterdir()) == []
    assert not (Path("/dev/shm") / inside_shm).exists()  # gone with the namespace


def test_the_current_directory_in_the_writable_directory_stays_writable(tmp_path):
    (tmp_path / "scratch" / "cwd").mkdir(parents=True)

    def attack(isolation: Isolation, report: Reporter) -> None:
        report({"complete": isolation.complete, "create": outcome(lambda: open("relative", "x").close()),
                "parent": outcome(lambda: open("../../outside", "x"))})

    reports, exitcode = run(SandboxPolicy(writable=(str(tmp_path / "scratch"),), confine_writes=True), attack,
                            before=lambda: os.chdir(tmp_path / "scratch" / "cwd"))
    assert exitcode == 0
    assert reports == [{"complete": True, "create": "ok", "parent": "EROFS"}]
    assert (tmp_path / "scratch" / "cwd" / "relative").exists()


def test_a_policy_whose_writable_directory_would_not_stay_writable_is_rejected(tmp_path):
    scratch = tmp_path / "scratch"
    with pytest.raises(ValueError, match="needs confine_writes=True"):
        SandboxPolicy(writable=(str(scratch),))
    with pytest.raises(ValueError, match=f"writable directory {scratch} lies at or below hidden {tmp_path}"):
        SandboxPolicy(writable=(str(scratch),), hidden=(str(tmp_path),), confine_writes=True)
    with pytest.raises(ValueError, match="lies at or below read-only"):
        SandboxPolicy(writable=(str(scratch),), read_only=(str(scratch),), confine_writes=True)
    below = SandboxPolicy(writable=(str(tmp_path),), read_only=(str(scratch),), confine_writes=True)
    assert below.read_only == (str(scratch),)  # a read-only path inside a writable one is fine


def test_a_path_the_view_cannot_show_is_reported(tmp_path):
    def attack(isolation: Isolation, report: Reporter) -> None:
        report(list(isolation.missing))

    (missing,), exitcode = run(SandboxPolicy(read_only=(str(tmp_path / "absent"),), confine_writes=True), attack)
    assert exitcode == 0
    assert missing == [f"file system view: {tmp_path / 'absent'}: does not exist"]


# --- processes -------------------------------------------------------------------------------------------


def test_outside_processes_are_invisible_and_out_of_reach():
    test_pid = os.getpid()

    def attack(isolation: Isolation, report: Reporter) -> None:
        status = dict(line.split(":\t", 1) for line in Path("/proc/self/status").read_text().splitlines())
        report({
            "isolation": [list(isolation.applied), list(isolation.missing)],
            "pid": os.getpid(),
            "visible": sorted(int(name) for name in os.listdir("/proc") if name.isdigit()),
            "signal the test": outcome(lambda: os.kill(test_pid, 0)),
            "session": [os.getsid(0), os.getpgrp()],
            "capabilities": [status[key].strip() for key in ("CapEff", "CapPrm", "CapInh", "CapBnd", "CapAmb")],
            "no_new_privs": status["NoNewPrivs"].strip(),
        })

    (report,), exitcode = run(SandboxPolicy(), attack)
    assert exitcode == 0
    applied, missing = report["isolation"]
    assert missing == [] and set(applied) == set(FULL_ISOLATION)
    assert report["pid"] == 1
    assert report["visible"] == [1]
    assert report["signal the test"] == "ESRCH"
    assert report["session"] == [1, 1]  # kill(0, sig) reaches its own group, not the one it came from
    assert report["capabilities"] == ["0000000000000000"] * 5
    assert report["no_new_privs"] == "1"


def test_terminate_kills_every_descendant_however_detached(marker):
    waiter, fd, reports = start_hostile_worker(marker)
    try:
        assert reports[0]["pid"] == 1
        tree = processes_named(marker)
        assert set(tree.values()) == {"w", "g", "d"}
        # A grace time no busy host uses up: a SIGKILL after it would show in the exit status, however slow the host.
        terminate_sandboxed(waiter, grace_s=60)
        assert reap(waiter) == -signal.SIGTERM  # the waiter took the namespace down on SIGTERM, no SIGKILL
        assert all_gone(marker, *tree)
        assert read_reports(fd) == []  # EOF: nothing holds the pipe any more
    finally:
        os.close(fd)


def test_namespace_dies_when_the_waiters_parent_dies(marker):
    read_fd, write_fd = os.pipe()
    middle = fork()
    if middle == 0:  # the waiter's parent, as the forkserver is a worker's
        try:
            os.close(read_fd)
            report = Reporter(write_fd)

            def attack(isolation: Isolation, report: Reporter) -> None:
                clear_pdeathsig()
                set_name(marker + "w")
                leave_children_behind(marker, report)
                report({"started": "w"})
                time.sleep(60)

            waiter = fork()
            if waiter == 0:
                enter_and_attack(SandboxPolicy(), attack, report)
            report({"waiter": waiter})
            time.sleep(60)
        finally:
            os._exit(0)
    os.close(write_fd)
    try:
        reports = read_reports(read_fd, count=4)
        (waiter,) = [report["waiter"] for report in reports if "waiter" in report]
        tree = processes_named(marker)
        assert set(tree.values()) == {"w", "g", "d"}
        os.kill(middle, signal.SIGKILL)
        reap(middle)
        assert all_gone(marker, waiter, *tree)
    finally:
        os.close(read_fd)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1], ids=lambda s: s.name)
def test_a_deadly_signal_to_the_waiter_takes_the_namespace_down(marker, signum):
    waiter, fd, _ = start_hostile_worker(marker)
    try:
        tree = processes_named(marker)
        os.kill(waiter, signal.SIGINT)  # shrugged off: a terminal's Ctrl-C reaches the worker itself
        time.sleep(0.05)
        assert not gone(waiter)
        os.kill(waiter, signum)  # SIGTERM: what Process.terminate() does
        assert reap(waiter) == -signum
        assert all_gone(marker, *tree)
    finally:
        os.close(fd)


def names_itself_and_waits(marker: str) -> Callable[[Isolation, Reporter], None]:
    """A worker that takes the name "<marker>w", says so, and sleeps."""

    def attack(isolation: Isolation, report: Reporter) -> None:
        set_name(marker + "w")
        report({"started": "w"})
        time.sleep(60)

    return attack


def test_sigkill_to_the_waiter_still_ends_a_worker_that_kept_its_pdeathsig(marker):
    waiter, fd = start(SandboxPolicy(), names_itself_and_waits(marker))
    try:
        read_reports(fd, count=1)
        worker = pid_named(marker, "w")
        os.kill(waiter, signal.SIGKILL)
        reap(waiter)
        assert all_gone(marker, worker)
    finally:
        os.close(fd)


def segfault() -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    ctypes.string_at(0)


@pytest.mark.parametrize(("end", "exitcode"), [
    (lambda: os._exit(0), 0),
    (lambda: os._exit(3), 3),
    (segfault, -signal.SIGSEGV),
], ids=["exit-0", "exit-3", "segfault"])
def test_the_waiter_ends_the_way_its_child_did(end, exitcode):
    reports, waiter_exitcode = run(SandboxPolicy(), lambda isolation, report: end())
    assert waiter_exitcode == exitcode


def test_the_waiter_dies_by_the_signal_that_killed_its_child_from_outside(marker):
    waiter, fd = start(SandboxPolicy(), names_itself_and_waits(marker))
    try:
        read_reports(fd, count=1)
        os.kill(pid_named(marker, "w"), signal.SIGKILL)
        assert reap(waiter) == -signal.SIGKILL
    finally:
        os.close(fd)


def test_the_waiter_holds_no_descriptor_of_its_parent():
    def attack(isolation: Isolation, report: Reporter) -> None:
        report({"started": "w"})
        os.close(report.fd)
        time.sleep(60)

    waiter, fd = start(SandboxPolicy(), attack)
    try:
        read_reports(fd, count=1)
        assert read_reports(fd, timeout=2.0) == []  # EOF while the waiter still runs: it let go of the pipe
        assert not gone(waiter)
        targets = {int(n): os.readlink(f"/proc/{waiter}/fd/{n}") for n in os.listdir(f"/proc/{waiter}/fd")}
        assert set(targets) == {0, 1, 2, WAITER_KEPT_FD}
        assert {targets[0], targets[1], targets[2]} == {os.devnull}
        assert targets[WAITER_KEPT_FD] != f"pipe:[{os.fstat(fd).st_ino}]"
    finally:
        terminate_sandboxed(waiter)
        reap(waiter)
        os.close(fd)


# --- probing and describing ------------------------------------------------------------------------------


def test_probe_reports_complete_isolation_on_this_machine(tmp_path):
    isolation = probe_isolation()
    assert isolation.complete, isolation.describe()
    assert set(isolation.applied) == set(FULL_ISOLATION)
    assert "weaker" not in isolation.describe()
    assert probe_isolation() is isolation  # cached
    (tmp_path / "ro").mkdir()
    (tmp_path / "hidden").mkdir()
    with_paths = probe_isolation(SandboxPolicy(read_only=(str(tmp_path / "ro"),), hidden=(str(tmp_path / "hidden"),)))
    assert with_paths.complete and {"read-only paths", "hidden paths"} <= set(with_paths.applied)
    confined = probe_isolation(SandboxPolicy(writable=(str(tmp_path / "ro"),), confine_writes=True))
    assert confined.complete, confined.describe()
    assert set(confined.applied) == {*FULL_ISOLATION, *VIEW}
    broken = probe_isolation(SandboxPolicy(read_only=(str(tmp_path / "absent"),)))
    assert not broken.complete
    assert broken.missing == (f"read-only paths: {tmp_path / 'absent'}: mount({tmp_path / 'absent'}) failed: "
                              "ENOENT (No such file or directory)",)


def test_describe_says_weaker_isolation_when_something_is_missing():
    weaker = Isolation(applied=("no new privileges",),
                       missing=("pid namespace: unshare failed: EPERM (unprivileged user namespaces disabled?)",))
    assert not weaker.complete
    line = weaker.describe()
    assert line.startswith("weaker isolation:") and "pid namespace: unshare failed: EPERM" in line
    assert "no new privileges" in line and "\n" not in line
    assert Isolation(applied=("pid namespace",), missing=()).describe() == "full isolation: pid namespace"


# --- fallback --------------------------------------------------------------------------------------------


def refuse_namespaces(flags: int) -> None:
    """What ``unshare`` raises where unprivileged user namespaces are disabled."""
    raise syscalls._error("unshare", errno.EPERM, syscalls.UNSHARE_HINTS[errno.EPERM])


@pytest.mark.parametrize("ignore_sigterm", [True, False], ids=["ignores-sigterm", "dies-on-sigterm"])
def test_fallback_says_what_is_missing_and_still_kills_detached_descendants(marker, tmp_path, ignore_sigterm):
    def before() -> None:
        enter._unshare = refuse_namespaces  # only in this forked child

    policy = SandboxPolicy(read_only=(str(tmp_path),), hidden=(str(tmp_path),), confine_writes=True)
    worker, fd, reports = start_hostile_worker(marker, policy, before, ignore_sigterm)
    try:
        isolation = Isolation(tuple(reports[0]["applied"]), tuple(reports[0]["missing"]))
        assert not isolation.complete and "weaker isolation" in isolation.describe()
        assert set(isolation.applied) == {"dies with its parent", "subreaper", "own session", "no new privileges",
                                          "no capabilities"}
        reason = "unshare failed: EPERM (unprivileged user namespaces disabled?)"
        assert set(isolation.missing) == {f"{name}: {reason}" for name in (
            "user namespace", "pid namespace", "mount namespace", "ipc namespace", "private /proc",
            "network namespace", *VIEW, "hidden paths")}
        assert reports[0]["pid"] == worker  # no new pid namespace
        tree = processes_named(marker)
        assert set(tree.values()) == {"w", "g", "d"}
        detached = pid_named(marker, "d")
        assert wait_for(lambda: parent_of(detached) == worker)  # the subreaper keeps it below the worker
        terminate_sandboxed(worker, grace_s=0.2)  # SIGKILL after the grace time if it ignores SIGTERM
        assert reap(worker) == -(signal.SIGKILL if ignore_sigterm else signal.SIGTERM)
        assert all_gone(marker, *tree)
    finally:
        os.close(fd)


def test_a_multithreaded_caller_gets_the_fallback_with_the_reason():
    stop = threading.Event()

    def attack(isolation: Isolation, report: Reporter) -> None:
        report(list(isolation.missing))

    reports, exitcode = run(SandboxPolicy(), attack,
                            before=lambda: threading.Thread(target=stop.wait, daemon=True).start())
    assert exitcode == 0
    assert "user namespace: unshare needs a single-threaded process, this one has 2 threads" in reports[0]
