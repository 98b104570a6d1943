"""Request and response bodies. Upstream's routes keep upstream's shapes (a client written for upstream's
server works unchanged); fields it lacks are added, never renamed. docs/serve.md shows each one."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from flashinfer_bench.data import Solution

Priority = Annotated[int, Field(ge=-100, le=100, description="orders this token's own tasks; higher first")]


class EvaluateRequest(BaseModel):
    solution: Solution
    workload_uuids: list[str] | None = Field(None, description="default: every workload of the definition")
    priority: Priority = 0
    fresh: bool = Field(False, description="evaluate again even if a stored verdict exists")


class EvaluateResponse(BaseModel):
    task_id: str
    normalized_solution_name: str
    status: str


class BatchSubmitRequest(BaseModel):
    tasks: Annotated[list[EvaluateRequest], Field(min_length=1)]


class BatchSubmitResponse(BaseModel):
    tasks: list[EvaluateResponse]


class Progress(BaseModel):
    total: int
    pending: int
    running: int
    done: int
    cancelled: int
    #: Of ``done``: answered from a stored verdict.
    cached: int


class TaskResponse(BaseModel):
    task_id: str
    status: str = Field(description="pending, running, completed, failed or cancelled")
    definition: str
    solution: str
    traces: list[dict[str, Any]] | None = Field(None, description="one result trace per workload done, "
                                                "as `run` writes them")
    error: str | None = None
    progress: Progress


class BatchRequest(BaseModel):
    task_ids: list[str]
    timeout: float = Field(0, ge=0, description="wait up to this many seconds for every task to end")


class DefinitionInfo(BaseModel):
    name: str
    description: str | None = None


class WorkerInfo(BaseModel):
    device: str
    healthy: bool


class HealthResponse(BaseModel):
    status: str
    workers: list[WorkerInfo]
    queue_size: int
    device_kind: str
    auth: bool
    error: str | None = None


class VerifyRequest(BaseModel):
    """NeMo Gym's verify request (``responses_create_params`` and the model's ``response``), with the solution
    either given as ``solution`` or written by the model as JSON in the response's last output text. Other
    fields are kept and sent back, as NeMo Gym's resource servers do."""

    model_config = ConfigDict(extra="allow")

    responses_create_params: dict[str, Any] | None = None
    response: dict[str, Any] | None = None
    solution: dict[str, Any] | None = None
    workload_uuids: list[str] | None = None
    priority: Priority = 0
    fresh: bool = False
    timeout: float | None = Field(None, ge=0, description="wait at most this long (default: the server's limit)")


class VerifyResponse(VerifyRequest):
    reward: float
    failure_reason: str | None = None
    task_id: str | None = None
    status: str | None = None
    traces: list[dict[str, Any]] | None = None
