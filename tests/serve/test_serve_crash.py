"""A server killed with SIGKILL in the middle of a batch, then started again on the same store, finishes every
task it had accepted, each evaluation exactly once."""

import sqlite3
import time

import pytest
from helpers import scale_add_set
from serve.server_process import ServerProcess

from flashinfer_bench.client import Client

#: Each call sleeps: an evaluation takes seconds, so the kill lands while the batch runs.
SLOW = "import time\ndef run(x, y):\n    time.sleep(0.25)\n    return x * {k} + y\n"
SIZES = (4, 8, 16, 32)


@pytest.mark.slow
def test_sigkill_mid_batch_then_restart_finishes_every_task_once(tmp_path):
    root = scale_add_set(tmp_path / "set", {}, sizes=SIZES)
    solutions = [{"name": f"slow{k}", "definition": "scale_add", "author": "tests",
                  "spec": {"language": "python", "target_hardware": ["cpu"], "entry_point": "main.py::run",
                           "destination_passing_style": False},
                  "sources": [{"path": "main.py", "content": SLOW.format(k=k)}]} for k in (2, 3)]
    server = ServerProcess(root, tmp_path).start()
    try:
        with Client(server.url, server.tokens[0]) as client:
            submitted = client.submit_batch([{"solution": s} for s in solutions])
            ids = [s.task_id for s in submitted]
            deadline = time.monotonic() + 300
            while True:  # until some evaluations are done and others are not
                done = sum(t["progress"]["done"] for t in client.tasks(ids))
                if done >= 1 or time.monotonic() > deadline:
                    break
                time.sleep(0.2)
            before = {t["task_id"]: t["traces"] for t in client.tasks(ids)}
        assert 1 <= done < 2 * len(SIZES), "the kill must land mid-batch"
        server.kill()

        server.start()  # same store
        with Client(server.url, server.tokens[0]) as client:
            tasks = client.wait(ids, timeout=600)
    finally:
        server.stop()
    for task in tasks:
        assert task["status"] == "completed"
        uuids = [t["workload"]["uuid"] for t in task["traces"]]
        assert sorted(uuids) == sorted(f"w{n}" for n in SIZES)  # every workload, once
        expected = "PASSED" if task["solution"].startswith("slow2_") else "INCORRECT_NUMERICAL"
        assert {t["evaluation"]["status"] for t in task["traces"]} == {expected}
        for trace in before[task["task_id"]]:  # what was done before the kill was kept, not done again
            assert trace in task["traces"]
    with sqlite3.connect(server.store) as db:
        states = db.execute("SELECT state, count(*) FROM evaluations GROUP BY state").fetchall()
    assert states == [("done", 2 * len(SIZES))]


@pytest.mark.slow
def test_sigterm_mid_batch_requeues_what_runs_and_a_restart_finishes_it(tmp_path):
    root = scale_add_set(tmp_path / "set", {}, sizes=SIZES)
    solution = {"name": "slow", "definition": "scale_add", "author": "tests",
                "spec": {"language": "python", "target_hardware": ["cpu"], "entry_point": "main.py::run",
                         "destination_passing_style": False},
                "sources": [{"path": "main.py", "content": SLOW.format(k=2).replace("0.25", "1.0")}]}
    server = ServerProcess(root, tmp_path).start()
    try:
        with Client(server.url, server.tokens[0]) as client:
            task_id = client.submit(solution).task_id
            deadline = time.monotonic() + 300
            while client.task(task_id)["progress"]["running"] == 0 and time.monotonic() < deadline:
                time.sleep(0.2)
        server.stop()  # SIGTERM: the running batch gets its grace, then goes back to the queue
        with sqlite3.connect(server.store) as db:
            states = dict(db.execute("SELECT state, count(*) FROM evaluations GROUP BY state").fetchall())
        assert "running" not in states and states.get("pending", 0) >= 1, states
        assert "go back to the queue" in server.log.read_text()
        server.start()
        with Client(server.url, server.tokens[0]) as client:
            (task,) = client.wait([task_id], timeout=600)
    finally:
        server.stop()
    assert task["status"] == "completed"
    assert sorted(t["workload"]["uuid"] for t in task["traces"]) == sorted(f"w{n}" for n in SIZES)
