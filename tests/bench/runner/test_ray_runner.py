"""The Ray runner (flashinfer_bench/bench/runner/ray/).

Tests marked ``ray`` run on a real Ray cluster of three nodes (one CPU each) on 127.0.0.1, started and stopped here,
one per module. They need ray installed (``pip install -e '.[ray]'``; CI installs it): without it they fail, they
are never skipped. ``-m 'not ray'`` deselects them. The other tests need no cluster.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from helpers import RAY_CLUSTER_ENV, REPO, child_env, scale_add_set

from flashinfer_bench.bench import Benchmark, BenchmarkConfig
from flashinfer_bench.bench.runner import persistent_runner
from flashinfer_bench.bench.runner.ray.blobs import blob_files, relative_blob_path
from flashinfer_bench.bench.runner.ray.cluster import Node, describe, device_kind
from flashinfer_bench.bench.runner.ray.scheduling import GroupQueue, group_cost
from flashinfer_bench.data import TraceSet

#: Every node on the loopback address: Ray would otherwise put this machine's outward address in its place.
CLUSTER_ENV = RAY_CLUSTER_ENV
NODE = {"num_cpus": 1, "node_ip_address": "127.0.0.1"}
#: A node whose raylet died is declared dead after about 3 s instead of Ray's default 30 s.
FAST_NODE_DEATH = {"health_check_period_ms": 1000, "health_check_timeout_ms": 1000, "health_check_failure_threshold": 3}
CONFIG = BenchmarkConfig(iterations=3, warmup_runs=1, num_trials=2, timeout_seconds=4)
EXAMPLES = REPO / "examples" / "trace-set"
CLI = [sys.executable, "-m", "flashinfer_bench.cli.main"]
CLI_FLAGS = ["--iterations", "3", "--warmup-runs", "1", "--num-trials", "2", "--timeout", "30"]

OK = "def run(x, y):\n    return x * 2 + y\n"
JOIN_WORKLOADS = 48
#: How long the join test waits for each step (a node's start on a busy machine takes tens of seconds).
GATE_S = 300
BEHAVIOURS = {
    "a_ok": OK,
    "b_wrong": "def run(x, y):\n    return x * 3 + y\n",
    "c_raises": "def run(x, y):\n    raise ValueError('boom')\n",
    "d_segfault": "import ctypes\ndef run(x, y):\n    ctypes.string_at(0)\n",
    "e_hangs": "def run(x, y):\n    while True:\n        pass\n",
}
#: What a worker can see of Ray: variables, modules, the session directory (named by the test).
PROBE = """import os, sys
def run(x, y):
    try:
        session = os.listdir({session!r})
    except OSError as exc:
        session = type(exc).__name__
    print('ray-env', sorted(k for k in os.environ if k.startswith('RAY')), 'ray-imported', 'ray' in sys.modules,
          'session', session)
    return x * 2 + y
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    cache = tmp_path_factory.mktemp("ray-build-cache")
    variables = {**CLUSTER_ENV, "FLASHINFER_BENCH_CACHE_DIR": str(cache)}
    saved = {name: os.environ.get(name) for name in variables}
    os.environ.update(variables)  # the nodes, the drivers started here and the CLI's children inherit them
    already_imported = "ray" in sys.modules
    try:
        from ray._raylet import Config
        from ray.cluster_utils import Cluster
    except ImportError:
        pytest.fail("the Ray tests need ray: pip install -e '.[ray]' (deselect them with -m 'not ray')")
    if already_imported:
        Config.initialize("")  # Ray reads RAY_AUTH_MODE when it is imported
    cluster = Cluster(initialize_head=True,
                      head_node_args={**NODE, "include_dashboard": False, "_system_config": FAST_NODE_DEATH})
    try:
        for _ in range(2):
            cluster.add_node(**NODE)
        yield cluster
    finally:
        cluster.shutdown()
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def ready_runner(cluster, **kwargs):
    """A RayRunner whose hosts have all started (so that every one of them is there when the first group is taken)."""
    import ray

    from flashinfer_bench.bench.runner.ray import RayRunner

    lines: list[str] = []
    runner = RayRunner(cluster.address, timeout_seconds=kwargs.pop("timeout_seconds", CONFIG.timeout_seconds),
                       announce=lines.append, **kwargs)
    ray.get([host.actor.ready.remote() for host in runner.hosts])
    runner.lines = lines
    return runner


def statuses(result: TraceSet) -> dict[tuple[str, str], str]:
    return {(t.solution, t.workload.uuid): t.evaluation.status.value for traces in result.traces.values() for t in traces}


def stored_pairs(root: Path) -> Counter:
    """(solution, workload) of every result line in the trace files."""
    pairs: Counter = Counter()
    for path in (root / "traces").rglob("*.jsonl"):
        for line in path.read_text().splitlines():
            record = json.loads(line)
            pairs[(record["solution"], record["workload"]["uuid"])] += 1
    return pairs


def device_processes() -> list[int]:
    found = []
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            command = Path(f"/proc/{name}/cmdline").read_bytes()
        except OSError:
            continue
        if b"flashinfer_bench.bench.runner.ray.device_process" in command:
            found.append(int(name))
    return found


def add_example(root: Path, definition: str, op_type: str) -> None:
    """Copy one definition of the example trace set, with its solutions, workloads and blobs, into ``root``."""
    for kind in ("definitions", "solutions/flashinfer-bench-examples", "workloads", "blob/workloads"):
        for source in (EXAMPLES / kind / op_type).rglob("*"):
            if source.is_file() and definition in str(source):
                target = root / source.relative_to(EXAMPLES)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(source.read_bytes())


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# --- on the cluster ------------------------------------------------------------------------------------------


@pytest.mark.ray
def test_verdicts_equal_the_local_runners_and_every_node_gets_work(cluster, tmp_path):
    session = cluster.head_node.get_session_dir_path()
    root = scale_add_set(tmp_path / "set", {**BEHAVIOURS, "f_probe": PROBE.format(session=session)},
                         sizes=(8, 16))
    add_example(root, "rmsnorm_h4096", "rmsnorm")
    trace_set = TraceSet.from_path(root)
    assert not trace_set.problems
    local = Benchmark(trace_set, CONFIG, runner_factory=lambda c: persistent_runner(["cpu"], timeout_seconds=4))
    expected = statuses(local.run_all(save_results=False))
    assert Counter(expected.values()) == {"PASSED": 10, "INCORRECT_NUMERICAL": 2, "RUNTIME_ERROR": 4, "TIMEOUT": 2}

    runner = ready_runner(cluster)
    assert runner.parallelism == 3
    # the device processes run at the nodes' niceness (this process's), not at the 15 Ray gives its workers
    # (lowering a niceness takes CAP_SYS_NICE: root has it)
    hosts = device_processes()
    assert len(hosts) == 3
    if os.geteuid() == 0:
        assert {os.getpriority(os.PRIO_PROCESS, pid) for pid in hosts} == {os.nice(0)}
    assert runner.lines == ["ray cluster: 3 node(s), 0 GPU(s), 3 CPU(s); each evaluation runs on a cpu device "
                            "(3 device(s), one per node)"]
    result = Benchmark(trace_set, CONFIG, runner_factory=lambda c: runner).run_all(save_results=False)
    assert statuses(result) == expected
    assert len(runner.evaluations_by_node) == 3 and sum(runner.evaluations_by_node.values()) == len(expected)
    assert runner.lines[-1] == f"ray: {len(expected)} evaluation(s) on 3 node(s)"
    probes = [t.evaluation.log for t in result.traces["scale_add"] if t.solution == "f_probe"]
    assert len(probes) == 2
    for log in probes:  # workers see nothing of Ray: no variables (its token), no module, no session folder at all
        assert "ray-env [] ray-imported False session FileNotFoundError" in log
    by_solution = {t.solution: t.evaluation.log for t in result.traces["scale_add"]}
    assert "SIGSEGV" in by_solution["d_segfault"] and "ValueError: boom" in by_solution["c_raises"]


@pytest.mark.ray
def test_a_node_that_joins_gets_work_and_a_node_killed_mid_run_loses_and_duplicates_nothing(cluster, tmp_path):
    """After the first verdict a fourth node joins; after its first verdict it is killed (its raylet and all),
    while it holds the rest of a group. (Nodes are added and removed from the main thread: Ray's node objects
    install signal handlers.) The run cannot end first, however slowly the new node's host starts on a busy
    machine: the first nodes' verdicts after their first one wait until the new node has given one, and the new
    node's second verdict waits until it is gone."""
    # 6 groups of 8 workloads x 2 solutions: the first three nodes hold 3 of them while they wait
    root = scale_add_set(tmp_path / "set", {"ok": OK, "ok_too": OK}, sizes=tuple(range(8, 8 + JOIN_WORKLOADS)))
    runner = ready_runner(cluster)
    joined_node: dict[str, str] = {}
    joined_verdict, joined_gone = threading.Event(), threading.Event()
    report = runner._report

    def gated_report(host, item, item_report, on_verdict):
        if host.node.node_id == joined_node.get("id"):
            if joined_verdict.is_set():
                joined_gone.wait(GATE_S)
            report(host, item, item_report, on_verdict)
            joined_verdict.set()
        else:
            report(host, item, item_report, on_verdict)
            joined_verdict.wait(GATE_S)

    runner._report = gated_report
    benchmark = Benchmark(TraceSet.from_path(root), CONFIG, runner_factory=lambda c: runner)
    outcome = {}
    driver = threading.Thread(target=lambda: outcome.setdefault("result", benchmark.run_all()), daemon=True)
    driver.start()

    def wait_for(condition, what):
        deadline = time.monotonic() + GATE_S
        while not condition():
            assert driver.is_alive(), f"the run ended before {what}: {dict(runner.evaluations_by_node)}"
            assert time.monotonic() < deadline, f"no {what} in {GATE_S} s"
            time.sleep(0.05)

    wait_for(lambda: runner.evaluations_by_node, "a first verdict")
    joined = cluster.add_node(**NODE)
    joined_node["id"] = joined.node_id
    wait_for(joined_verdict.is_set, "a verdict from the node that joined")
    assert runner.evaluations_by_node[joined.node_id] == 1
    cluster.remove_node(joined)
    joined_gone.set()
    driver.join(GATE_S)
    result = outcome["result"]
    assert runner.hosts_lost == 1
    assert set(statuses(result).values()) == {"PASSED"}
    assert len(stored_pairs(root)) == 2 * JOIN_WORKLOADS
    assert stored_pairs(root) == Counter({pair: 1 for pair in statuses(result)})
    deadline = time.monotonic() + 20
    while device_processes() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert device_processes() == []  # the killed node's device process, judge and workers went with it


@pytest.mark.ray
def test_resume_after_the_driver_is_killed_mid_run(cluster, tmp_path):
    root = scale_add_set(tmp_path / "set", {"ok": OK, "ok_too": OK, "ok_three": OK}, sizes=tuple(range(8, 8 + 16)))
    command = [*CLI, "run", "--local", str(root), "--ray-address", cluster.address, *CLI_FLAGS]
    driver = subprocess.Popen(command, env=child_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              start_new_session=True)
    deadline = time.monotonic() + 120
    while sum(stored_pairs(root).values()) < 3 and driver.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert driver.poll() is None, f"the run ended before it could be interrupted: {driver.stderr.read().decode()}"
    os.killpg(driver.pid, signal.SIGKILL)
    driver.wait()
    interrupted = stored_pairs(root)
    assert 3 <= sum(interrupted.values()) < 48
    resumed = subprocess.run([*command, "--resume"], env=child_env(), capture_output=True, text=True, timeout=240)
    assert resumed.returncode == 0, resumed.stderr
    assert f"evaluating {48 - len(interrupted)} (solution, workload) pairs" in resumed.stdout + resumed.stderr
    pairs = stored_pairs(root)
    assert len(pairs) == 48 and set(pairs.values()) == {1}


@pytest.mark.ray
def test_the_cli_starts_the_cluster_first_and_runs_every_trace_set_given(cluster, tmp_path):
    first = scale_add_set(tmp_path / "first", {"ok": OK}, sizes=(8, 16))
    second = scale_add_set(tmp_path / "second", {"ok": OK, "ok_too": OK}, sizes=(8,))
    run = subprocess.run([*CLI, "run", "--local", str(first), str(second), "--ray-address", cluster.address,
                          *CLI_FLAGS], env={**child_env(), "PYTHONUNBUFFERED": "1"}, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, timeout=240)
    assert run.returncode == 0, run.stdout
    lines = run.stdout.splitlines()  # in the order written
    announced = [i for i, line in enumerate(lines) if line.startswith("ray cluster: 3 node(s)")]
    # The device hosts were started before the trace sets were read; the second trace set started its own.
    assert len(announced) == 2 and announced[0] < min(i for i, line in enumerate(lines) if "trace set" in line)
    assert stored_pairs(first) == {("ok", "w8"): 1, ("ok", "w16"): 1}
    assert stored_pairs(second) == {("ok", "w8"): 1, ("ok_too", "w8"): 1}


@pytest.mark.ray
def test_blob_inputs_reach_nodes_that_cannot_see_the_trace_set(cluster, tmp_path):
    """The driver runs in a mount namespace of its own, where the trace set is on a tmpfs no node sees: the
    blobs of the example's paged-attention workloads can only come through Ray's object store."""
    copy = tmp_path / "copy"
    add_example(copy, "gqa_paged_decode_h8_kv2_d64_ps1", "gqa_paged")
    assert list((copy / "blob").rglob("*.safetensors"))
    hidden = tmp_path / "hidden"
    hidden.mkdir()
    script = (f"mount -t tmpfs none {hidden} && cp -r {copy}/. {hidden}/ && exec {' '.join(CLI)} run --local {hidden} "
              f"--ray-address {cluster.address} {' '.join(CLI_FLAGS)}")
    run = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", script], env=child_env(),
                         capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stderr
    assert list(hidden.iterdir()) == []  # out here (and on every node) the folder is empty
    assert run.stderr.count(": PASSED") == 6, run.stderr
    assert "ray: 6 evaluation(s) on" in run.stderr


@pytest.mark.ray
@pytest.mark.parametrize("address, message", [
    ("127.0.0.1:{port}", "error: no Ray cluster answers at 127.0.0.1:{port}: "),
    ("not-an-address", "error: ray address 'not-an-address': expected 'auto' or HOST:PORT of a running Ray cluster"),
], ids=["dead", "malformed"])
def test_a_wrong_or_dead_address_is_one_line_and_exit_2(tmp_path, address, message):
    port = free_port()
    root = scale_add_set(tmp_path / "set", {"ok": OK}, sizes=(8,))
    started = time.monotonic()
    run = subprocess.run([*CLI, "run", "--local", str(root), "--ray-address", address.format(port=port)],
                         env=child_env(), capture_output=True, text=True, timeout=120)
    assert run.returncode == 2
    errors = [line for line in run.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith(message.format(port=port)), run.stderr
    assert "Traceback" not in run.stderr
    assert time.monotonic() - started < 60


@pytest.mark.ray
def test_nodes_that_cannot_start_a_host_are_one_error(cluster, tmp_path):
    import ray

    from flashinfer_bench.bench.runner.ray import RayClusterError, RayRunner

    class NotInstalled:
        def __init__(self, *args):
            raise ImportError("No module named 'flashinfer_bench'")

        def ready(self):
            """Never called: the actor dies in __init__."""

    runner = RayRunner(cluster.address, timeout_seconds=4, announce=lambda line: None)
    for host in list(runner.hosts):  # as if no node had the package: hosts fail to start, twice per node
        runner._lose(host)
    runner._actor_class = ray.remote(NotInstalled)
    trace_set = TraceSet.from_path(scale_add_set(tmp_path / "set", {"ok": OK}, sizes=(8,)))
    started = time.monotonic()
    with pytest.raises(RayClusterError, match=r"^no node of the Ray cluster could start a device host; the last "
                                              r"failure: node \w+ \(127.0.0.1\): .* No module named 'flashinfer_bench'$"):
        Benchmark(trace_set, CONFIG, runner_factory=lambda c: runner).run_all(save_results=False)
    assert time.monotonic() - started < 60


@pytest.mark.ray
def test_the_config_and_RAY_ADDRESS_choose_the_ray_runner(monkeypatch):
    from flashinfer_bench.bench.benchmark import default_runner
    from flashinfer_bench.bench.runner.ray import RayClusterError

    dead = f"127.0.0.1:{free_port()}"
    with pytest.raises(RayClusterError, match=f"no Ray cluster answers at {dead}"):
        default_runner(CONFIG.model_copy(update={"ray_address": dead}))
    monkeypatch.setenv("RAY_ADDRESS", dead)
    with pytest.raises(RayClusterError, match=f"no Ray cluster answers at {dead}"):
        default_runner(CONFIG)


# --- without a cluster ---------------------------------------------------------------------------------------


def test_without_ray_the_cli_says_how_to_install_it(tmp_path):
    root = scale_add_set(tmp_path / "set", {"ok": OK}, sizes=(8,))
    blocked = ("import sys; sys.modules['ray'] = None; from flashinfer_bench.cli.main import main; "
               f"sys.exit(main(['run', '--local', {str(root)!r}, '--ray-address', 'auto']))")
    run = subprocess.run([sys.executable, "-c", blocked], env=child_env(), capture_output=True, text=True, timeout=120)
    assert run.returncode == 2
    assert run.stderr.strip().splitlines()[-1] == "error: the Ray runner needs ray: pip install 'flashinfer-bench[ray]'"


def test_the_flag_alone_means_auto():
    from flashinfer_bench.cli.main import build_parser, load_config

    for argv, expected in ((["--ray-address"], "auto"), (["--ray-address", "10.0.0.1:6379"], "10.0.0.1:6379"),
                           ([], None)):
        args = build_parser().parse_args(["run", "--local", "x", *argv])
        assert load_config(args).ray_address == expected


def items_of(tmp_path, sizes, solutions=("a",)):
    root = scale_add_set(tmp_path, dict.fromkeys(solutions, OK), sizes=sizes)
    return Benchmark(TraceSet.from_path(root), CONFIG).work_items()


def test_longest_groups_go_first_and_a_lost_hosts_remainder_goes_back_to_the_front(tmp_path):
    small = items_of(tmp_path / "small", (8,))
    large = items_of(tmp_path / "large", (1 << 20,))  # 8 MiB of inputs and outputs per trial
    many = items_of(tmp_path / "many", (8, 16, 32))
    assert group_cost(large) > group_cost(many) > group_cost(small)
    queue = GroupQueue([small, large, many])
    assert queue.take() == large
    assert queue.take() == many
    queue.done(many[1:])  # its host was lost after reporting the first item
    assert queue.take() == many[1:]
    assert queue.take() == small
    assert not queue.wait_finished(0.01)
    for _ in range(3):
        queue.done()
    assert queue.wait_finished(0.01) and queue.take() is None


def test_a_free_host_waits_while_groups_are_in_flight(tmp_path):
    """A host with nothing to take must not leave while another host may still lose its group."""
    items = items_of(tmp_path, (8, 16))
    queue = GroupQueue([items])
    assert queue.take() == items
    taken = []
    waiter = threading.Thread(target=lambda: taken.append(queue.take()))
    waiter.start()
    time.sleep(0.2)
    assert waiter.is_alive()
    queue.done(items[1:])
    waiter.join(5)
    assert taken == [items[1:]]


def test_blob_paths_stay_inside_the_trace_set(tmp_path):
    root = tmp_path / "set"
    add_example(root, "gqa_paged_decode_h8_kv2_d64_ps1", "gqa_paged")
    items = Benchmark(TraceSet.from_path(root), CONFIG).work_items()
    files = blob_files(items)
    assert len(files) == 3 and all(path.is_file() and path.is_relative_to(root) for path in files.values())
    for bad in ("/etc/passwd", "blob/../../secret.safetensors"):
        with pytest.raises(ValueError, match="must be relative to the trace set and stay inside it"):
            relative_blob_path(bad)


def test_the_device_kind_and_the_start_up_line():
    gpu_nodes = [Node("a", "10.0.0.1", 8, 96), Node("b", "10.0.0.2", 8, 96), Node("head", "10.0.0.3", 0, 8)]
    assert device_kind(gpu_nodes) == "cuda"
    assert [node.devices("cuda") for node in gpu_nodes] == [8, 8, 0]  # GPUs only, as a local run
    assert describe(gpu_nodes, "cuda") == ("ray cluster: 3 node(s), 16 GPU(s), 200 CPU(s); each evaluation runs on a "
                                           "cuda device (16 device(s), one per GPU)")
    cpu_nodes = [Node("a", "127.0.0.1", 0, 1), Node("b", "127.0.0.1", 0, 0.5)]
    assert device_kind(cpu_nodes) == "cpu" and [node.devices("cpu") for node in cpu_nodes] == [1, 0]


def test_the_host_module_imports_nothing_heavy_before_its_device_process_starts():
    """A device host's actor imports host.py and only then starts the device process, whose worker server's imports
    are what the device's first verdict waits for: host.py itself imports neither pydantic nor the data model."""
    probe = ("import sys; import flashinfer_bench.bench.runner.ray.host; "
             "print(sorted(m for m in ('pydantic', 'flashinfer_bench.data', 'torch', 'ray') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, env=child_env())
    assert done.stdout.strip() == "[]"


def test_the_device_process_gets_the_drivers_thread_count_not_rays(monkeypatch):
    """Ray sets OMP_NUM_THREADS=1 in an actor that has one CPU; the device process (judge and workers) gets the
    driver's value instead, or none, as a local run has; and none of Ray's own variables."""
    from flashinfer_bench.bench.runner.ray.host import device_process_environment

    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.setenv("RAY_AUTH_TOKEN", "secret")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")
    unset = device_process_environment(None)
    assert "OMP_NUM_THREADS" not in unset and not any(name.startswith("RAY_") for name in unset)
    assert unset["CUDA_VISIBLE_DEVICES"] == "3"
    assert device_process_environment("8")["OMP_NUM_THREADS"] == "8"
