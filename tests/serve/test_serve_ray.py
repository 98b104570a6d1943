"""`serve --ray-address`: evaluations go through the Ray runner, kept warm across tasks (a real local cluster)."""

import os
import sys

import pytest
from helpers import RAY_CLUSTER_ENV, python_solution, scale_add_set
from serve.server_process import ServerProcess

from flashinfer_bench.client import Client

NODE = {"num_cpus": 1, "node_ip_address": "127.0.0.1"}
#: Every node on the loopback address (Ray would otherwise put this machine's outward address in its place).
CLUSTER_ENV = RAY_CLUSTER_ENV
OK = "def run(x, y):\n    return x * 2 + y\n"
WRONG = "def run(x, y):\n    return x * 3 + y\n"


@pytest.fixture
def cluster(tmp_path, monkeypatch):
    for name, value in {**CLUSTER_ENV, "FLASHINFER_BENCH_CACHE_DIR": str(tmp_path / "cache")}.items():
        monkeypatch.setenv(name, value)  # the nodes and the server inherit them
    already_imported = "ray" in sys.modules
    try:
        from ray._raylet import Config
        from ray.cluster_utils import Cluster
    except ImportError:
        pytest.fail("the Ray tests need ray: pip install -e '.[ray]' (deselect them with -m 'not ray')")
    if already_imported:
        Config.initialize("")
    cluster = Cluster(initialize_head=True, head_node_args={**NODE, "include_dashboard": False})
    cluster.add_node(**NODE)
    yield cluster
    cluster.shutdown()


@pytest.mark.ray
@pytest.mark.slow
def test_tasks_run_on_the_ray_cluster_one_after_another(cluster, tmp_path):
    root = scale_add_set(tmp_path / "set", {}, sizes=(8, 16, 32))
    server = ServerProcess(root, tmp_path, args=("--ray-address", cluster.address)).start()
    try:
        with Client(server.url, server.tokens[0]) as client:
            assert client.health()["device_kind"] == f"ray:{cluster.address}"
            for source, expected in ((OK, "PASSED"), (WRONG, "INCORRECT_NUMERICAL"), (OK + "# again\n", "PASSED")):
                traces = client.evaluate(python_solution("r", source), timeout=600)
                assert [t.evaluation.status.value for t in traces] == [expected] * 3
    finally:
        server.stop()
    assert os.environ["RAY_AUTH_TOKEN"] not in server.log.read_text()
