"""A client of ``flashinfer-bench serve``: submit solutions, wait for their traces, get a reward.

Retries are safe to repeat: every submission carries an ``Idempotency-Key`` made once per call, so a retry
after a lost answer returns the task the first attempt made instead of making a second one. Requests are
retried on a connection that could not be made, on 429 and 503 (after the server's ``Retry-After``), and, for
requests that are safe to repeat, on a lost answer or a 502/504.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flashinfer_bench.data import Solution, Trace

TOKEN_ENV = "FLASHINFER_BENCH_TOKEN"
RETRY_STATUSES = {429, 503}
LOST_ANSWER_STATUSES = {502, 504}
TERMINAL = {"completed", "failed", "cancelled"}
#: Longest single long poll; a longer wait is several.
POLL_S = 60.0


class ServeError(RuntimeError):
    """The server refused a request (``status`` is the HTTP status, ``detail`` its reason)."""

    def __init__(self, status: int, detail: Any):
        super().__init__(f"HTTP {status}: {detail}")
        self.status = status
        self.detail = detail


@dataclass(frozen=True)
class Submitted:
    task_id: str
    normalized_solution_name: str
    status: str


def _httpx() -> Any:
    try:
        import httpx
    except ImportError:
        raise ImportError("the flashinfer-bench client needs httpx: pip install 'flashinfer-bench[client]'") from None
    return httpx


def solution_json(solution: Solution | dict[str, Any] | str | os.PathLike[str]) -> dict[str, Any]:
    """A solution as the JSON the server takes: a Solution, its dict, or the path of its JSON file."""
    if isinstance(solution, Solution):
        return solution.model_dump(mode="json")
    if isinstance(solution, dict):
        return solution
    return json.loads(Path(solution).read_text())


class Client:
    def __init__(self, url: str = "http://127.0.0.1:8000", token: str | None = None, *, timeout_s: float = 30.0,
                 retries: int = 6, backoff_s: float = 0.5):
        httpx = _httpx()
        token = token if token is not None else os.environ.get(TOKEN_ENV)
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.Client(base_url=url.rstrip("/"), headers=headers, timeout=timeout_s)
        self._timeout_s = timeout_s
        self.retries = retries
        self.backoff_s = backoff_s

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------------------------------- transport
    def request(self, method: str, path: str, *, repeatable: bool, wait_s: float = 0.0, **kwargs: Any) -> Any:
        """The decoded JSON answer; retried as the module docstring says, else ServeError."""
        httpx = _httpx()
        timeout = self._timeout_s + wait_s
        for attempt in range(self.retries + 1):
            last = attempt == self.retries
            delay = self.backoff_s * 2 ** min(attempt, 4)
            try:
                response = self._http.request(method, path, timeout=timeout, **kwargs)
            except httpx.ConnectError:
                if last:
                    raise
                time.sleep(delay)
                continue
            except httpx.TransportError:
                if last or not repeatable:
                    raise
                time.sleep(delay)
                continue
            status = response.status_code
            if not last and (status in RETRY_STATUSES or (repeatable and status in LOST_ANSWER_STATUSES)):
                retry_after = response.headers.get("retry-after", "")
                time.sleep(float(retry_after) if retry_after.isdigit() else delay)
                continue
            if status >= 400:
                try:
                    detail = response.json().get("detail")
                except ValueError:
                    detail = response.text
                raise ServeError(status, detail)
            return response.json()
        raise AssertionError("unreachable")

    # ------------------------------------------------------------------------------------------- catalog
    def health(self) -> dict[str, Any]:
        return self.request("GET", "/health", repeatable=True)

    def definitions(self) -> list[dict[str, Any]]:
        return self.request("GET", "/definitions", repeatable=True)

    def definition(self, name: str) -> dict[str, Any]:
        return self.request("GET", f"/definitions/{name}", repeatable=True)

    def workloads(self, definition: str) -> list[dict[str, Any]]:
        return self.request("GET", f"/definitions/{definition}/workloads", repeatable=True)

    def workload(self, uuid_: str) -> dict[str, Any]:
        return self.request("GET", f"/workloads/{uuid_}", repeatable=True)

    # ------------------------------------------------------------------------------------------- tasks
    def submit(self, solution: Solution | dict[str, Any] | str | os.PathLike[str],
               workload_uuids: Sequence[str] | None = None, *, priority: int = 0, fresh: bool = False,
               idempotency_key: str | None = None) -> Submitted:
        body = {"solution": solution_json(solution), "workload_uuids": list(workload_uuids) if workload_uuids
                else None, "priority": priority, "fresh": fresh}
        key = idempotency_key or uuid.uuid4().hex
        answer = self.request("POST", "/evaluate", repeatable=True, json=body, headers={"Idempotency-Key": key})
        return Submitted(**answer)

    def submit_batch(self, requests: Sequence[dict[str, Any]], *, idempotency_key: str | None = None
                     ) -> list[Submitted]:
        """``requests``: dicts of /evaluate's body (``solution`` may be a Solution or a path here too)."""
        tasks = [{**r, "solution": solution_json(r["solution"])} for r in requests]
        key = idempotency_key or uuid.uuid4().hex
        answer = self.request("POST", "/evaluate/batch", repeatable=True, json={"tasks": tasks},
                              headers={"Idempotency-Key": key})
        return [Submitted(**task) for task in answer["tasks"]]

    def task(self, task_id: str, timeout: float = 0) -> dict[str, Any]:
        return self.request("GET", f"/tasks/{task_id}", repeatable=True, wait_s=timeout,
                            params={"timeout": timeout})

    def tasks(self, task_ids: Sequence[str], timeout: float = 0) -> list[dict[str, Any]]:
        return self.request("POST", "/tasks/batch", repeatable=True, wait_s=timeout,
                            json={"task_ids": list(task_ids), "timeout": timeout})

    def wait(self, task_ids: Sequence[str], timeout: float | None = None) -> list[dict[str, Any]]:
        """The tasks once every one has ended (completed, failed or cancelled), or when ``timeout`` is over."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = POLL_S if deadline is None else min(POLL_S, max(0.0, deadline - time.monotonic()))
            tasks = self.tasks(task_ids, timeout=left)
            if all(t["status"] in TERMINAL for t in tasks) or (deadline is not None and time.monotonic() >= deadline):
                return tasks

    def cancel(self, task_id: str) -> dict[str, Any]:
        return self.request("DELETE", f"/tasks/{task_id}", repeatable=True)

    def evaluate(self, solution: Solution | dict[str, Any] | str | os.PathLike[str],
                 workload_uuids: Sequence[str] | None = None, *, timeout: float | None = None, **options: Any
                 ) -> list[Trace]:
        """Submit and wait: the traces, one per workload, as `run` writes them."""
        submitted = self.submit(solution, workload_uuids, **options)
        (task,) = self.wait([submitted.task_id], timeout)
        return [Trace.model_validate(t) for t in task.get("traces") or []]

    def verify(self, solution: Solution | dict[str, Any] | str | os.PathLike[str] | None = None,
               **fields: Any) -> dict[str, Any]:
        """POST /verify: NeMo Gym's request fields (``responses_create_params``, ``response``) and/or a
        solution; the answer holds ``reward``. Retried only where the server did not take the request."""
        body = dict(fields)
        if solution is not None:
            body["solution"] = solution_json(solution)
        return self.request("POST", "/verify", repeatable=False, wait_s=float(body.get("timeout") or 3600), json=body)
