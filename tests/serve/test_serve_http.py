"""A real server (uvicorn in a subprocess, 127.0.0.1) spoken to over HTTP: upstream's route shapes, tokens,
bad input, stored verdicts, cancellation, idempotency, /verify, and `flashinfer-bench submit`."""

import json
import subprocess
import sys

import pytest
from helpers import child_env, python_solution, scale_add_set
from serve.server_process import ServerProcess

from flashinfer_bench.bench.runner import available_devices
from flashinfer_bench.cli.main import main
from flashinfer_bench.data import Trace

OK = "def run(x, y):\n    return x * 2 + y\n"
WRONG = "def run(x, y):\n    return x * 3 + y\n"
SLEEPY = "import time\ndef run(x, y):\n    time.sleep(0.3)\n    return x * 2 + y\n"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = scale_add_set(tmp_path_factory.mktemp("set"), {"ok": OK}, sizes=(8, 100))
    # One evaluation per batch: a slow task keeps the next ones pending (for cancellation).
    process = ServerProcess(root, tmp_path_factory.mktemp("server"), args=("--batch-size", "1")).start()
    yield process
    process.stop()


def solution(source: str = OK, name: str = "mine") -> dict:
    return python_solution(name, source)


def test_upstreams_routes_and_shapes(server):
    with server.http() as http:
        health = http.get("/health").json()
        # One worker per device the server sees: the CPU here, each GPU on a GPU machine.
        devices = [{"device": device, "healthy": True} for device in available_devices()]
        assert health["status"] == "ok" and health["workers"] == devices
        assert isinstance(health["queue_size"], int)
        assert http.get("/definitions").json() == [{"name": "scale_add", "description": None}]
        assert http.get("/definitions/scale_add").json()["reference"].startswith("import torch")
        assert http.get("/definitions/nope").status_code == 404
        workloads = http.get("/definitions/scale_add/workloads").json()
        assert [w["uuid"] for w in workloads] == ["w8", "w100"] and workloads[0]["axes"] == {"n": 8}
        assert http.get("/workloads/w100").json()["axes"] == {"n": 100}
        assert http.get("/workloads/nope").status_code == 404

        submitted = http.post("/evaluate", json={"solution": solution(), "workload_uuids": ["w8"]})
        assert submitted.status_code == 200  # upstream's answer
        body = submitted.json()
        assert body["normalized_solution_name"].startswith("mine_") and body["task_id"]
        task = http.get(f"/tasks/{body['task_id']}", params={"timeout": 120}).json()
        assert task["status"] == "completed" and task["error"] is None
        assert (task["definition"], task["solution"]) == ("scale_add", body["normalized_solution_name"])
        (trace,) = [Trace.model_validate(t) for t in task["traces"]]  # the lines `run` writes
        assert trace.workload.uuid == "w8" and trace.solution == body["normalized_solution_name"]
        assert trace.evaluation.status.value == "PASSED" and trace.evaluation.performance.latency_ms > 0
        assert task["progress"] == {"total": 1, "pending": 0, "running": 0, "done": 1, "cancelled": 0, "cached": 0}

        both = http.post("/tasks/batch", json={"task_ids": [body["task_id"]] * 2, "timeout": 0}).json()
        assert [t["task_id"] for t in both] == [body["task_id"]] * 2 and both[0]["status"] == "completed"
        assert http.post("/tasks/batch", json={"task_ids": [], "timeout": 0}).json() == []
        assert http.post("/tasks/batch", json={"task_ids": [body["task_id"], "nope"]}).status_code == 404


def test_a_token_is_required_and_tasks_stay_with_their_token(server):
    with server.http(token=None) as anonymous, server.http(token="not-a-token-at-all") as forged:
        assert anonymous.get("/health").status_code == 200
        for client in (anonymous, forged):
            assert client.get("/definitions").status_code == 401
            response = client.post("/evaluate", json={"solution": solution()})
            assert response.status_code == 401 and response.headers["www-authenticate"] == "Bearer"
    with server.http() as first, server.http(server.tokens[1]) as second:
        task_id = first.post("/evaluate", json={"solution": solution(), "workload_uuids": ["w8"]}).json()["task_id"]
        assert second.get(f"/tasks/{task_id}").status_code == 404
        assert second.delete(f"/tasks/{task_id}").status_code == 404
        assert first.get(f"/tasks/{task_id}").status_code == 200


def test_bad_input_is_refused_saying_what_is_wrong(server):
    with server.http() as http:
        unknown = dict(solution(), definition="nope")
        response = http.post("/evaluate", json={"solution": unknown})
        assert response.status_code == 400 and "nope" in response.json()["detail"]
        # Upstream's answer to workloads the definition lacks: a task that failed, saying so.
        response = http.post("/evaluate", json={"solution": solution(), "workload_uuids": ["w8", "w9"]})
        task = http.get(f"/tasks/{response.json()['task_id']}").json()
        assert task["status"] == "failed" and "No workloads found" in task["error"] and "w9" in task["error"]
        assert task["progress"]["total"] == 0 and task["traces"] == []
        broken = dict(solution(), spec={"language": "python"})
        response = http.post("/evaluate", json={"solution": broken})
        assert response.status_code == 422 and "entry_point" in json.dumps(response.json())


def test_a_resubmission_gets_the_stored_verdict_unless_fresh(server):
    with server.http() as http:
        def evaluated(**options) -> dict:
            task_id = http.post("/evaluate", json={"solution": solution(OK + "# again\n", "again"), **options}).json()["task_id"]
            return http.get(f"/tasks/{task_id}", params={"timeout": 120}).json()

        first = evaluated()
        second = evaluated()
        assert first["progress"]["cached"] == 0 and second["progress"]["cached"] == 2
        assert second["traces"] == first["traces"]
        renamed = http.post("/evaluate", json={"solution": solution(OK + "# again\n", "renamed")}).json()
        renamed = http.get(f"/tasks/{renamed['task_id']}", params={"timeout": 120}).json()
        assert renamed["progress"]["cached"] == 2 and {t["solution"] for t in renamed["traces"]} == {renamed["solution"]}
        fresh = evaluated(fresh=True)
        assert fresh["progress"]["cached"] == 0
        stamps = {t["workload"]["uuid"]: t["evaluation"]["timestamp"] for t in first["traces"]}
        assert all(t["evaluation"]["timestamp"] != stamps[t["workload"]["uuid"]] for t in fresh["traces"])


def test_cancelling_stops_what_has_not_started(server):
    with server.http() as http:
        busy = http.post("/evaluate", json={"solution": solution(SLEEPY, "sleepy")}).json()["task_id"]
        queued = http.post("/evaluate", json={"solution": solution(name="queued")}).json()["task_id"]
        cancelled = http.delete(f"/tasks/{queued}").json()
        assert cancelled["status"] == "cancelled" and cancelled["progress"]["cancelled"] >= 1
        assert http.get(f"/tasks/{busy}", params={"timeout": 120}).json()["status"] == "completed"
        final = http.get(f"/tasks/{queued}").json()
        assert final["status"] == "cancelled"
        assert final["progress"]["done"] + final["progress"]["cancelled"] == 2


def test_a_repeated_idempotency_key_returns_the_same_task(server):
    body = {"solution": solution(name="idem"), "workload_uuids": ["w8"]}
    with server.http() as http:
        first = http.post("/evaluate", json=body, headers={"Idempotency-Key": "k-1"})
        again = http.post("/evaluate", json=body, headers={"Idempotency-Key": "k-1"})
        assert (first.status_code, again.status_code) == (200, 200)
        assert again.json()["task_id"] == first.json()["task_id"]
        other = http.post("/evaluate", json={**body, "workload_uuids": ["w100"]}, headers={"Idempotency-Key": "k-1"})
        assert other.status_code == 409
        batch = http.post("/evaluate/batch", json={"tasks": [body, {**body, "workload_uuids": ["w100"]}]})
        assert batch.status_code == 200 and len(batch.json()["tasks"]) == 2


def test_verify_answers_nemo_gyms_request_with_a_reward(server):
    with server.http() as http:
        right = http.post("/verify", json={"solution": solution(name="v"), "workload_uuids": ["w8"]}).json()
        assert right["reward"] >= 1.0 and right["failure_reason"] is None and right["status"] == "completed"
        text = "My kernel:\n```json\n" + json.dumps(solution(WRONG, "w")) + "\n```"
        gym = {"responses_create_params": {"input": [{"role": "user", "content": "write scale_add"}]},
               "response": {"output": [{"type": "message", "content": [{"type": "output_text", "text": text}]}]},
               "workload_uuids": ["w8"], "task_index": 7}
        wrong = http.post("/verify", json=gym).json()
        assert wrong["reward"] == 0.0 and "INCORRECT_NUMERICAL" in wrong["failure_reason"]
        assert wrong["responses_create_params"] == gym["responses_create_params"] and wrong["task_index"] == 7
        garbled = http.post("/verify", json={**gym, "response": {"output": []}}).json()
        assert garbled["reward"] == 0.0 and "output_text" in garbled["failure_reason"]
        elsewhere = http.post("/verify", json={"solution": dict(solution(), definition="nope"), "reward": 9}).json()
        assert elsewhere["reward"] == 0.0 and "Definition not found: nope" in elsewhere["failure_reason"]


def test_the_submit_command(server, tmp_path):
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(json.dumps(solution(name="cli")))
    bad.write_text(json.dumps(solution(WRONG, "cli_wrong")))
    cli = [sys.executable, "-m", "flashinfer_bench.cli.main", "submit", "--server", server.url,
           "--token-file", str(server.token_file), "--output", str(tmp_path / "traces.jsonl")]
    ran = subprocess.run([*cli, str(good)], capture_output=True, text=True, env=child_env(), timeout=300)
    assert ran.returncode == 0, ran.stderr
    assert "completed (2/2 done" in ran.stdout and ran.stdout.count("PASSED") == 2
    ran = subprocess.run([*cli, str(bad)], capture_output=True, text=True, env=child_env(), timeout=300)
    assert ran.returncode == 1 and "INCORRECT_NUMERICAL" in ran.stdout
    lines = (tmp_path / "traces.jsonl").read_text().splitlines()
    assert len(lines) == 4 and all(Trace.model_validate_json(line) for line in lines)


def test_no_auth_only_on_a_loopback_bind_and_a_token_file_otherwise(tmp_path, capsys):
    root = scale_add_set(tmp_path, {"ok": OK})
    assert main(["serve", "--local", str(root), "--no-auth", "--host", "0.0.0.0"]) == 2
    assert "loopback" in capsys.readouterr().err
    assert main(["serve", "--local", str(root)]) == 2
    assert "--token-file" in capsys.readouterr().err
    short = tmp_path / "tokens"
    short.write_text("abc\n")
    assert main(["serve", "--local", str(root), "--token-file", str(short)]) == 2
    assert f"{short}:1" in capsys.readouterr().err


def test_no_auth_on_loopback_accepts_everyone_and_says_so(tmp_path):
    root = scale_add_set(tmp_path / "set", {"ok": OK}, sizes=(8,))
    server = ServerProcess(root, tmp_path, args=("--no-auth",)).start()
    try:
        with server.http(token=None) as anonymous:
            assert anonymous.get("/health").json()["auth"] is False
            assert anonymous.get("/definitions").status_code == 200
    finally:
        server.stop()
    assert "authentication: OFF (--no-auth)" in server.log.read_text()
