"""A hostile tenant's solution, run by the server, tries to reach the service itself (its port), read its store
(another tenant's solution) and read its token file. It must get nothing and change no other verdict.

It cannot hold yet: the sandbox (bench/runner/sandbox.py) has no network namespace, so 127.0.0.1 is reachable,
and it hides only the directories the runner names, not the server's store or token file. The runner needs a
network namespace for workers and a way for `serve` to hide paths of its own (see docs/serve.md).
"""

import json

import pytest
from helpers import python_solution, scale_add_set
from serve.server_process import ServerProcess

MARKER = "other-tenants-secret-7f3a"
OTHER = f"def run(x, y):\n    # {MARKER}\n    return x * 2 + y\n"
HOSTILE = """
import socket

def _probe():
    found = []
    try:
        socket.create_connection(("127.0.0.1", {port}), timeout=2).close()
        found.append("PORT-REACHED")
    except OSError:
        pass
    for path in ({store!r}, {store!r} + "-wal"):
        try:
            if {marker!r}.encode() in open(path, "rb").read():
                found.append("STORE-READ")
        except OSError:
            pass
    try:
        found.append("TOKEN-READ:" + open({tokens!r}).read().split()[-1])
    except OSError:
        pass
    print("FOUND", found)

_probe()

def run(x, y):
    return x * 2 + y
"""


@pytest.mark.slow
def test_a_hostile_solution_reaches_neither_the_service_nor_its_store_nor_its_tokens(tmp_path):
    root = scale_add_set(tmp_path / "set", {}, sizes=(8,))
    server = ServerProcess(root, tmp_path).start()
    try:
        with server.http(server.tokens[1]) as other:
            other_id = other.post("/evaluate", json={"solution": python_solution("other", OTHER)}).json()["task_id"]
            before = other.get(f"/tasks/{other_id}", params={"timeout": 120}).json()
        source = HOSTILE.format(port=server.port, store=str(server.store), marker=MARKER,
                                tokens=str(server.token_file))
        with server.http() as hostile:
            task_id = hostile.post("/evaluate", json={"solution": python_solution("hostile", source)}).json()["task_id"]
            task = hostile.get(f"/tasks/{task_id}", params={"timeout": 120}).json()
        with server.http(server.tokens[1]) as other:
            after = other.get(f"/tasks/{other_id}").json()
    finally:
        server.stop()
    (trace,) = task["traces"]
    log = trace["evaluation"]["log"]
    assert "FOUND" in log, "the probe did not run: the test proves nothing"
    assert "FOUND []" in log, log
    assert server.tokens[1] not in json.dumps(task)
    assert after["traces"] == before["traces"] and after["status"] == "completed"
