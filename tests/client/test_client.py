"""The client against a real server: traces back as Trace objects, errors as ServeError, a submission whose
answer was lost retried without a second task, and a 429 waited out."""

import sqlite3
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest
from helpers import python_solution, scale_add_set
from serve.server_process import ServerProcess

from flashinfer_bench.client import Client, ServeError
from flashinfer_bench.data import Trace

OK = "def run(x, y):\n    return x * 2 + y\n"
#: Busy for seconds, not a minute: on a GPU a replayed session captures 65 calls, each its sleep
#: (benchmarks/host_bound_sessions.py), and at 0.5 s a call that outlasted the client's retries (30 s).
SLEEPY = "import time\ndef run(x, y):\n    time.sleep(0.1)\n    return x * 2 + y\n"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = scale_add_set(tmp_path_factory.mktemp("set"), {}, sizes=(8,))
    # One queued evaluation per token: a second submission meanwhile is answered 429.
    process = ServerProcess(root, tmp_path_factory.mktemp("server"), args=("--max-queued-per-token", "1")).start()
    yield process
    process.stop()


def tasks_named(server: ServerProcess, prefix: str) -> int:
    with sqlite3.connect(server.store) as db:
        return db.execute("SELECT count(*) FROM tasks WHERE solution_name LIKE ?", (f"{prefix}_%",)).fetchone()[0]


def test_evaluate_returns_traces_and_refusals_are_serve_errors(server):
    with Client(server.url, server.tokens[0]) as client:
        assert client.health()["auth"] is True
        assert [w["uuid"] for w in client.workloads("scale_add")] == ["w8"]
        (trace,) = client.evaluate(python_solution("plain", OK), timeout=120)
        assert isinstance(trace, Trace) and trace.evaluation.status.value == "PASSED"
        with pytest.raises(ServeError) as refused:
            client.definition("nope")
        assert refused.value.status == 404
    with Client(server.url, "wrong-token-0000000") as client, pytest.raises(ServeError) as refused:
        client.definitions()
    assert refused.value.status == 401


class LosesFirstAnswer(BaseHTTPRequestHandler):
    """Forwards to the server; the first POST /evaluate reaches it, but its answer never comes back."""

    target = ""
    lost = threading.Event()

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = self.rfile.read(int(self.headers["Content-Length"]))
        headers = {k: v for k, v in self.headers.items() if k.lower() in ("authorization", "idempotency-key",
                                                                           "content-type")}
        answer = httpx.post(self.target + self.path, content=body, headers=headers, timeout=60)
        if not self.lost.is_set():
            self.lost.set()
            self.close_connection = True
            return  # nothing written: the client sees the connection close
        self.send_response(answer.status_code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer.content)))
        self.end_headers()
        self.wfile.write(answer.content)

    def log_message(self, *args: object) -> None:
        pass


def test_a_lost_answer_is_retried_without_a_second_task(server):
    LosesFirstAnswer.target = server.url
    proxy = ThreadingHTTPServer(("127.0.0.1", 0), LosesFirstAnswer)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    try:
        with Client(f"http://127.0.0.1:{proxy.server_port}", server.tokens[0], backoff_s=0.1) as client:
            submitted = client.submit(python_solution("lost", OK + "# lost\n"))
    finally:
        proxy.shutdown()
    assert LosesFirstAnswer.lost.is_set()
    assert tasks_named(server, "lost") == 1
    with Client(server.url, server.tokens[0]) as client:
        assert client.wait([submitted.task_id], timeout=120)[0]["status"] == "completed"


def test_a_429_is_waited_out(server):
    with Client(server.url, server.tokens[1]) as client:
        busy = client.submit(python_solution("busy", SLEEPY))
        with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {server.tokens[1]}"}) as raw:
            refused = raw.post("/evaluate", json={"solution": python_solution("next", OK + "# next\n")})
        assert refused.status_code == 429 and "quota" in refused.json()["detail"]
        queued = client.submit(python_solution("next", OK + "# next\n"))  # retried until the queue has room
        done = client.wait([busy.task_id, queued.task_id], timeout=300)
    assert [t["status"] for t in done] == ["completed", "completed"]
