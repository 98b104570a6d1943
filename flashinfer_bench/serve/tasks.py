"""Routes of tasks: submit one or a batch, read them (long poll), cancel one, and verify (NeMo Gym's reward)."""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, HTTPException, Query, Request
from pydantic import ValidationError

from flashinfer_bench.data import Solution
from flashinfer_bench.data.errors import describe_validation_error
from flashinfer_bench.serve.changes import Changes
from flashinfer_bench.serve.engine import Engine, normalized_name
from flashinfer_bench.serve.limits import Admission
from flashinfer_bench.serve.models import (
    BatchRequest,
    BatchSubmitRequest,
    BatchSubmitResponse,
    EvaluateRequest,
    EvaluateResponse,
    Progress,
    TaskResponse,
    VerifyRequest,
    VerifyResponse,
)
from flashinfer_bench.serve.reward import reward, solution_from_response
from flashinfer_bench.serve.scheduler import Scheduler
from flashinfer_bench.serve.settings import Settings
from flashinfer_bench.serve.store import CANCELLED, DONE, PENDING, RUNNING, NewTask, Store, TaskRow

TERMINAL = {"completed", "failed", "cancelled"}


@dataclass(frozen=True)
class Service:
    settings: Settings
    store: Store
    engine: Engine
    scheduler: Scheduler
    admission: Admission
    changes: Changes


def service(request: Request) -> Service:
    return request.app.state.service


def owner(request: Request) -> str:
    return request.app.state.authenticate(request)


Owner = Annotated[str, Depends(owner)]
TheService = Annotated[Service, Depends(service)]
router = APIRouter()


def new_task(svc: Service, who: str, req: EvaluateRequest) -> NewTask:
    """The task for a request. An unknown definition is 400; workloads the definition lacks make a task that
    failed at once, saying which (upstream answers both so)."""
    solution = req.solution
    definition = solution.definition
    if definition not in svc.engine.trace_set.definitions:
        raise HTTPException(400, detail=f"Definition not found: {definition}")
    known = svc.engine.workloads.get(definition, {})
    uuids = list(dict.fromkeys(req.workload_uuids)) if req.workload_uuids is not None else list(known)
    unknown = [u for u in uuids if u not in known]
    error = None
    if unknown or not uuids:
        error = f"No workloads found: definition '{definition}' has no workload {unknown or '(none at all)'}"
        uuids = []
    normalized = solution.model_copy(update={"name": normalized_name(solution)})
    return NewTask(who, definition, normalized.name, solution.content_hash(), normalized.model_dump_json(),
                   tuple(uuids), req.priority, req.fresh, error)


async def submit(svc: Service, who: str, requests: list[EvaluateRequest], idempotency_key: str | None,
                 body_hash: str) -> list[EvaluateResponse]:
    tasks = [new_task(svc, who, req) for req in requests]
    key = (who, idempotency_key, body_hash) if idempotency_key else None

    def admit_and_add() -> tuple[list[str], bool]:
        with svc.admission.lock:
            # A retry of a request already accepted is answered whatever the limits say now.
            if idempotency_key is None or not svc.store.known_key(who, idempotency_key):
                svc.admission.check(who, sum(len(t.workload_uuids) for t in tasks))
            try:
                return svc.store.add_tasks(tasks, idempotency=key)
            except ValueError as exc:
                raise HTTPException(409, detail=str(exc)) from None

    ids, _ = await asyncio.to_thread(admit_and_add)
    svc.scheduler.wake()
    rows = [await asyncio.to_thread(svc.store.task, i, who) for i in ids]
    return [EvaluateResponse(task_id=r.id, normalized_solution_name=r.solution_name, status=r.status)
            for r in rows if r is not None]


def body_hash(request_model: Any) -> str:
    return hashlib.sha256(request_model.model_dump_json().encode()).hexdigest()


def task_response(row: TaskRow) -> TaskResponse:
    counts = row.counts
    progress = Progress(total=row.total, pending=counts.get(PENDING, 0), running=counts.get(RUNNING, 0),
                        done=counts.get(DONE, 0), cancelled=counts.get(CANCELLED, 0), cached=row.cached)
    return TaskResponse(task_id=row.id, status=row.status, definition=row.definition, solution=row.solution_name,
                        traces=[json.loads(t) for t in row.traces], error=row.error, progress=progress)


async def wait_for(svc: Service, who: str, task_ids: list[str], timeout: float) -> list[TaskRow]:
    """The tasks once all have ended or ``timeout`` has passed; 404 for one this caller does not have."""
    if not task_ids:
        return []
    deadline = time.monotonic() + min(timeout, svc.settings.limits.max_wait_s)
    while True:
        event = svc.changes.current()
        rows = [await asyncio.to_thread(svc.store.task, task_id, who) for task_id in task_ids]
        missing = [task_id for task_id, row in zip(task_ids, rows, strict=True) if row is None]
        if missing:
            raise HTTPException(404, detail=f"Task not found: {missing[0]}")
        remaining = deadline - time.monotonic()
        if remaining <= 0 or all(row.status in TERMINAL for row in rows):
            return rows  # type: ignore[return-value] - None was ruled out above
        await svc.changes.wait(event, remaining)


@router.post("/evaluate", response_model=EvaluateResponse)
async def evaluate(req: EvaluateRequest, svc: TheService, who: Owner,
                   idempotency_key: Annotated[str | None, Header()] = None) -> EvaluateResponse:
    return (await submit(svc, who, [req], idempotency_key, body_hash(req)))[0]


@router.post("/evaluate/batch", response_model=BatchSubmitResponse)
async def evaluate_batch(req: BatchSubmitRequest, svc: TheService, who: Owner,
                         idempotency_key: Annotated[str | None, Header()] = None) -> BatchSubmitResponse:
    if len(req.tasks) > svc.settings.limits.batch_tasks:
        raise HTTPException(413, detail=f"tasks: at most {svc.settings.limits.batch_tasks} in one batch")
    return BatchSubmitResponse(tasks=await submit(svc, who, req.tasks, idempotency_key, body_hash(req)))


@router.post("/tasks/batch", response_model=list[TaskResponse])
async def get_tasks(req: BatchRequest, svc: TheService, who: Owner) -> list[TaskResponse]:
    return [task_response(row) for row in await wait_for(svc, who, req.task_ids, req.timeout)]


@router.get("/tasks/{task_id}", response_model=TaskResponse)
async def get_task(task_id: str, svc: TheService, who: Owner,
                   timeout: Annotated[float, Query(ge=0)] = 0) -> TaskResponse:
    return task_response((await wait_for(svc, who, [task_id], timeout))[0])


@router.delete("/tasks/{task_id}", response_model=TaskResponse)
async def cancel_task(task_id: str, svc: TheService, who: Owner) -> TaskResponse:
    """Evaluations not started are cancelled; one already running finishes and is kept."""
    if not await asyncio.to_thread(svc.store.cancel, task_id, who):
        raise HTTPException(404, detail=f"Task not found: {task_id}")
    svc.changes.notify()
    return task_response((await wait_for(svc, who, [task_id], 0))[0])


@router.post("/verify", response_model=VerifyResponse)
async def verify(req: VerifyRequest, svc: TheService, who: Owner) -> VerifyResponse:
    """NeMo Gym's verify: evaluate the solution, wait for its verdicts, and answer the request with ``reward``.
    A solution that is missing or invalid is the model's failure: reward ``error``, saying why."""
    config = svc.settings.reward
    answered = set(VerifyResponse.model_fields) - set(VerifyRequest.model_fields)
    echoed = {k: v for k, v in req.model_dump(exclude_none=True).items() if k not in answered}
    try:
        data = req.solution if req.solution is not None else solution_from_response(req.response or {})
        solution = Solution.model_validate(data)
    except ValueError as exc:
        reason = str(exc)
        if isinstance(exc, ValidationError):
            field, message = describe_validation_error(exc)
            reason = f"solution: {field}: {message}" if field else f"solution: {message}"
        return VerifyResponse(**echoed, reward=config.error, failure_reason=reason)
    request = EvaluateRequest(solution=solution, workload_uuids=req.workload_uuids, priority=req.priority,
                              fresh=req.fresh)
    try:
        (submitted,) = await submit(svc, who, [request], None, "")
    except HTTPException as exc:
        if exc.status_code != 400:
            raise
        return VerifyResponse(**echoed, reward=config.error, failure_reason=str(exc.detail))
    timeout = req.timeout if req.timeout is not None else svc.settings.limits.max_wait_s
    row = (await wait_for(svc, who, [submitted.task_id], timeout))[0]
    if row.status not in TERMINAL:
        raise HTTPException(504, detail=f"no verdict within {timeout:g} s; poll GET /tasks/{row.id}")
    traces = [json.loads(t) for t in row.traces]
    failure = row.error or next((f"{t['workload']['uuid']}: {t['evaluation']['status']}" for t in traces
                                 if t["evaluation"]["status"] != "PASSED"), None)
    return VerifyResponse(**echoed, reward=reward(traces, config), failure_reason=failure, task_id=row.id,
                          status=row.status, traces=traces)
