"""The FastAPI application: the served trace set's definitions and workloads, health, and the task routes
(tasks.py). ``create_app`` wires a store, an engine and a scheduler together; the lifespan starts the scheduler
and, at shutdown, stops taking work and puts what was running back in the queue."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import Depends, FastAPI, HTTPException

import flashinfer_bench
from flashinfer_bench.serve.changes import Changes
from flashinfer_bench.serve.engine import Engine
from flashinfer_bench.serve.limits import Admission, Authenticator
from flashinfer_bench.serve.models import DefinitionInfo, HealthResponse, WorkerInfo
from flashinfer_bench.serve.scheduler import Scheduler
from flashinfer_bench.serve.settings import Settings
from flashinfer_bench.serve.store import Store
from flashinfer_bench.serve.tasks import Service, TheService, owner, router

logger = logging.getLogger(__name__)

#: At shutdown, how long the running batch may take to finish before it is put back in the queue.
SHUTDOWN_GRACE_S = 10.0

ENDPOINTS = [
    ("GET", "/health", "server health, devices and queue size (no token needed)"),
    ("GET", "/definitions", "the served definitions"),
    ("GET", "/definitions/{name}", "one definition"),
    ("GET", "/definitions/{name}/workloads", "its workloads"),
    ("GET", "/workloads/{uuid}", "one workload"),
    ("POST", "/evaluate", "submit a solution: {solution, workload_uuids?, priority?, fresh?}"),
    ("POST", "/evaluate/batch", "submit several: {tasks: [...]}"),
    ("GET", "/tasks/{task_id}", "a task's status, progress and traces (?timeout= waits for the end)"),
    ("POST", "/tasks/batch", "several tasks: {task_ids, timeout?}"),
    ("DELETE", "/tasks/{task_id}", "cancel what has not started"),
    ("POST", "/verify", "NeMo Gym's verify: the solution's reward"),
]


def create_app(settings: Settings, store: Store, engine: Engine) -> FastAPI:
    changes = Changes()
    scheduler = Scheduler(store, engine, batch_size=settings.batch_size, on_change=changes.notify)
    svc = Service(settings, store, engine, scheduler, Admission(store, settings.limits), changes)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        changes.bind(asyncio.get_running_loop())
        scheduler.start()
        yield
        svc.admission.closed = True
        await asyncio.to_thread(scheduler.stop, SHUTDOWN_GRACE_S)

    app = FastAPI(title="flashinfer-bench serve", version=flashinfer_bench.__version__, lifespan=lifespan)
    app.state.service = svc
    app.state.authenticate = Authenticator(settings.tokens)
    app.include_router(router)
    authenticated = [Depends(owner)]
    trace_set = engine.trace_set

    @app.get("/")
    async def root() -> dict[str, Any]:
        return {"name": "flashinfer-bench serve", "version": flashinfer_bench.__version__, "docs": "/docs",
                "endpoints": [{"method": m, "path": p, "description": d} for m, p, d in ENDPOINTS]}

    @app.get("/health", response_model=HealthResponse)
    async def health(svc: TheService) -> HealthResponse:
        healthy = svc.scheduler.healthy
        queued = await asyncio.to_thread(svc.store.queued)
        return HealthResponse(status="ok" if healthy else "degraded", queue_size=queued,
                              workers=[WorkerInfo(device=d, healthy=healthy) for d in svc.engine.devices],
                              device_kind=svc.engine.device_kind, auth=svc.settings.tokens is not None,
                              error=svc.scheduler.last_error)

    @app.get("/definitions", response_model=list[DefinitionInfo], dependencies=authenticated)
    async def definitions() -> list[DefinitionInfo]:
        return [DefinitionInfo(name=name, description=d.description) for name, d in trace_set.definitions.items()]

    @app.get("/definitions/{name}", dependencies=authenticated)
    async def definition(name: str) -> dict[str, Any]:
        found = trace_set.definitions.get(name)
        if found is None:
            raise HTTPException(404, detail=f"Definition not found: {name}")
        return found.model_dump(mode="json")

    @app.get("/definitions/{name}/workloads", dependencies=authenticated)
    async def workloads(name: str) -> list[dict[str, Any]]:
        if name not in trace_set.definitions:
            raise HTTPException(404, detail=f"Definition not found: {name}")
        return [t.workload.model_dump(mode="json") for t in trace_set.workloads.get(name, [])]

    @app.get("/workloads/{uuid}", dependencies=authenticated)
    async def workload(uuid: str) -> dict[str, Any]:
        for by_uuid in engine.workloads.values():
            if uuid in by_uuid:
                return by_uuid[uuid].workload.model_dump(mode="json")
        raise HTTPException(404, detail=f"Workload not found: {uuid}")

    return app
