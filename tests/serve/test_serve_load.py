"""20 clients at once for a bounded time: every answer is 200, 202 or 429, and every accepted task finishes."""

import random
import threading
import time
from collections import Counter

import pytest
from helpers import python_solution, scale_add_set
from serve.server_process import ServerProcess

CLIENTS = 20
SECONDS = 15.0
#: One variant sleeps in every call, so that evaluations pile up behind it whatever the machine's speed; briefly:
#: on a GPU a replayed session captures 65 calls, each its sleep (benchmarks/host_bound_sessions.py), and at 0.05 s
#: a call the 15 s saw 14 tasks accepted on an H100 host.
SOURCES = [f"def run(x, y):\n    return x * 2 + y  # variant {i}\n" for i in range(3)]
SOURCES.append("import time\ndef run(x, y):\n    time.sleep(0.01)\n    return x * 2 + y\n")


@pytest.mark.slow
def test_twenty_clients_lose_nothing_and_see_only_200_202_or_429(tmp_path):
    root = scale_add_set(tmp_path / "set", {}, sizes=(8, 16, 32))
    # Small per-token bounds, so that some submissions are turned away with 429.
    server = ServerProcess(root, tmp_path, tokens=4, args=("--max-queued-per-token", "6")).start()
    statuses: Counter[int] = Counter()
    accepted: dict[str, tuple[str, int]] = {}  # task id -> (token, workloads)
    lock = threading.Lock()
    errors: list[BaseException] = []
    end = time.monotonic() + SECONDS

    def client(index: int) -> None:
        token = server.tokens[index % len(server.tokens)]
        rng = random.Random(index)
        try:
            with server.http(token) as http:
                while time.monotonic() < end:
                    uuids = rng.sample(["w8", "w16", "w32"], rng.randint(1, 3))
                    body = {"solution": python_solution(f"c{index}", rng.choice(SOURCES)), "workload_uuids": uuids,
                            "fresh": rng.random() < 0.3}
                    response = http.post("/evaluate", json=body)
                    with lock:
                        statuses[response.status_code] += 1
                    if response.status_code == 200:
                        task_id = response.json()["task_id"]
                        with lock:
                            accepted[task_id] = (token, len(uuids))
                        polled = http.get(f"/tasks/{task_id}")
                        with lock:
                            statuses[polled.status_code] += 1
                    elif response.status_code == 429:
                        time.sleep(0.1)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(CLIENTS)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(SECONDS + 120)
        assert not errors, errors
        assert set(statuses) <= {200, 202, 429}, statuses
        assert len(accepted) >= CLIENTS and statuses[429] >= 1  # both happened
        by_token: dict[str, list[str]] = {}
        for task_id, (token, _) in accepted.items():
            by_token.setdefault(token, []).append(task_id)
        for token, task_ids in by_token.items():
            with server.http(token) as http:
                deadline = time.monotonic() + 600
                while True:
                    tasks = http.post("/tasks/batch", json={"task_ids": task_ids, "timeout": 30}, timeout=90).json()
                    if all(t["status"] == "completed" for t in tasks) or time.monotonic() > deadline:
                        break
            for task in tasks:
                assert task["status"] == "completed"
                assert len(task["traces"]) == accepted[task["task_id"]][1]
                assert {t["evaluation"]["status"] for t in task["traces"]} == {"PASSED"}
    finally:
        server.stop()
