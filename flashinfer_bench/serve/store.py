"""The server's durable state: tasks, their evaluations, stored verdicts and idempotency keys, in SQLite.

Every state change is one transaction (WAL), so a ``kill -9`` leaves each evaluation either done (with its trace) or
not; on start, evaluations that were running go back to pending (``recover``). An evaluation becomes done at
most once (``finish`` changes only an evaluation that is not done yet), so a task's results hold one trace per
workload however often the server was killed and restarted.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

SCHEMA = """
CREATE TABLE IF NOT EXISTS tasks (
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    definition TEXT NOT NULL,
    solution_name TEXT NOT NULL,
    solution_hash TEXT NOT NULL,
    solution_json TEXT NOT NULL,
    priority INTEGER NOT NULL DEFAULT 0,
    fresh INTEGER NOT NULL DEFAULT 0,
    cancelled INTEGER NOT NULL DEFAULT 0,
    error TEXT,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS evaluations (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id TEXT NOT NULL REFERENCES tasks(id),
    owner TEXT NOT NULL,
    workload_uuid TEXT NOT NULL,
    state TEXT NOT NULL,
    cached INTEGER NOT NULL DEFAULT 0,
    trace TEXT,
    finished REAL,
    UNIQUE (task_id, workload_uuid)
);
CREATE INDEX IF NOT EXISTS evaluations_by_state ON evaluations (state, owner);
CREATE TABLE IF NOT EXISTS verdicts (
    key TEXT PRIMARY KEY,
    trace TEXT NOT NULL,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS idempotency (
    owner TEXT NOT NULL,
    key TEXT NOT NULL,
    request_hash TEXT NOT NULL,
    task_ids TEXT NOT NULL,
    PRIMARY KEY (owner, key)
);
"""

PENDING, RUNNING, DONE, CANCELLED = "pending", "running", "done", "cancelled"


@dataclass(frozen=True)
class NewTask:
    """A task as submitted: one solution over some workloads of its definition."""

    owner: str
    definition: str
    solution_name: str
    solution_hash: str
    solution_json: str
    workload_uuids: tuple[str, ...]
    priority: int = 0
    fresh: bool = False
    #: A task that cannot run (upstream's shape for unknown workloads): stored as failed, with no evaluations.
    error: str | None = None


@dataclass(frozen=True)
class TaskRow:
    id: str
    owner: str
    definition: str
    solution_name: str
    cancelled: bool
    error: str | None
    created: float
    counts: dict[str, int]
    traces: tuple[str, ...]
    cached: int

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    @property
    def status(self) -> str:
        """Upstream's names (pending, running, completed, failed), and ``cancelled``."""
        if self.error:
            return "failed"
        if self.counts.get(PENDING, 0) + self.counts.get(RUNNING, 0) == 0:
            return "cancelled" if self.cancelled else "completed"
        if self.counts.get(RUNNING, 0) or self.counts.get(DONE, 0):
            return "running"
        return "pending"


@dataclass(frozen=True)
class Evaluation:
    """A pending evaluation as the scheduler sees it."""

    id: int
    task_id: str
    owner: str
    workload_uuid: str
    definition: str
    solution_name: str
    solution_hash: str
    solution_json: str
    priority: int
    fresh: bool


class Store:
    """One SQLite file (WAL mode); a connection per operation, writes serialised by a lock of this process."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._write_lock = threading.Lock()
        self._local = threading.local()
        with self._connect() as db:
            db.execute("PRAGMA journal_mode=WAL")
            db.executescript(SCHEMA)

    @contextlib.contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        """This thread's connection, kept open: closing the last one would checkpoint the WAL (an fsync)."""
        db = getattr(self._local, "db", None)
        if db is None:
            db = self._local.db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        yield db

    @contextlib.contextmanager
    def _write(self, *, synced: bool = False) -> Iterator[sqlite3.Connection]:
        """A write transaction. Every commit survives a crash of this process (WAL); ``synced`` ones, what a
        caller was told is accepted, also a crash of the machine (fsync at commit, ~10 ms or more a disk)."""
        with self._write_lock, self._connect() as db:
            db.execute(f"PRAGMA synchronous={'FULL' if synced else 'NORMAL'}")
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")

    # ------------------------------------------------------------------------------------------- submitting
    def add_tasks(self, tasks: Sequence[NewTask], *, idempotency: tuple[str, str, str] | None = None
                  ) -> tuple[list[str], bool]:
        """Insert tasks in one transaction; returns their ids and whether they are new. With ``idempotency``
        (owner, key, request hash), a key seen before returns the tasks it made instead (ValueError when the
        request differs)."""
        with self._write(synced=True) as db:
            if idempotency is not None:
                owner, key, request_hash = idempotency
                row = db.execute("SELECT request_hash, task_ids FROM idempotency WHERE owner=? AND key=?",
                                 (owner, key)).fetchone()
                if row is not None:
                    if row[0] != request_hash:
                        raise ValueError("this Idempotency-Key was used before with a different request")
                    return row[1].split(","), False
            ids = []
            now = time.time()
            for task in tasks:
                task_id = uuid.uuid4().hex
                ids.append(task_id)
                db.execute("INSERT INTO tasks (id, owner, definition, solution_name, solution_hash, solution_json,"
                           " priority, fresh, error, created) VALUES (?,?,?,?,?,?,?,?,?,?)",
                           (task_id, task.owner, task.definition, task.solution_name, task.solution_hash,
                            task.solution_json, task.priority, int(task.fresh), task.error, now))
                db.executemany("INSERT INTO evaluations (task_id, owner, workload_uuid, state) VALUES (?,?,?,?)",
                               [(task_id, task.owner, w, PENDING) for w in task.workload_uuids])
            if idempotency is not None:
                db.execute("INSERT INTO idempotency (owner, key, request_hash, task_ids) VALUES (?,?,?,?)",
                           (*idempotency, ",".join(ids)))
            return ids, True

    def known_key(self, owner: str, key: str) -> bool:
        with self._connect() as db:
            return db.execute("SELECT 1 FROM idempotency WHERE owner=? AND key=?", (owner, key)).fetchone() is not None

    def cancel(self, task_id: str, owner: str) -> bool:
        """Cancel what has not started; what runs finishes. False when the owner has no such task."""
        with self._write(synced=True) as db:
            if not db.execute("UPDATE tasks SET cancelled=1 WHERE id=? AND owner=?", (task_id, owner)).rowcount:
                return False
            db.execute("UPDATE evaluations SET state=? WHERE task_id=? AND state=?", (CANCELLED, task_id, PENDING))
            return True

    # ------------------------------------------------------------------------------------------- scheduling
    def recover(self) -> int:
        """After a crash or a shutdown: evaluations left running go back to pending. Returns how many."""
        with self._write() as db:
            return db.execute("UPDATE evaluations SET state=? WHERE state=?", (PENDING, RUNNING)).rowcount

    def pending_by_owner(self, limit: int) -> dict[str, list[Evaluation]]:
        """For every owner with pending evaluations, its first ``limit`` (by priority, then submission)."""
        query = ("SELECT e.id, e.task_id, e.owner, e.workload_uuid, t.definition, t.solution_name, t.solution_hash,"
                 " t.solution_json, t.priority, t.fresh FROM evaluations e JOIN tasks t ON t.id = e.task_id"
                 " WHERE e.state=? AND e.owner=? ORDER BY t.priority DESC, e.id LIMIT ?")
        with self._connect() as db:
            owners = [row[0] for row in db.execute("SELECT DISTINCT owner FROM evaluations WHERE state=?",
                                                   (PENDING,))]
            return {owner: [Evaluation(*row[:9], bool(row[9])) for row in db.execute(query, (PENDING, owner, limit))]
                    for owner in owners}

    def start(self, ids: Sequence[int]) -> list[int]:
        """Mark pending evaluations running; returns those that were still pending (not cancelled meanwhile)."""
        started = []
        with self._write() as db:
            for evaluation_id in ids:
                if db.execute("UPDATE evaluations SET state=? WHERE id=? AND state=?",
                              (RUNNING, evaluation_id, PENDING)).rowcount:
                    started.append(evaluation_id)
        return started

    def finish(self, ids: Sequence[int], trace: str, *, cached: bool, verdict_key: str | None) -> int:
        """Record one trace for evaluations (and, with ``verdict_key``, as the stored verdict); an evaluation
        already done is left as it is. Returns how many became done."""
        now = time.time()
        with self._write() as db:
            done = sum(db.execute("UPDATE evaluations SET state=?, trace=?, cached=?, finished=? WHERE id=? AND "
                                  "state IN (?, ?)", (DONE, trace, int(cached), now, i, PENDING, RUNNING)).rowcount
                       for i in ids)
            if verdict_key is not None:
                db.execute("INSERT OR REPLACE INTO verdicts (key, trace, created) VALUES (?,?,?)",
                           (verdict_key, trace, now))
            return done

    def fail_task(self, task_id: str, error: str) -> None:
        with self._write() as db:
            db.execute("UPDATE tasks SET error=? WHERE id=?", (error, task_id))
            db.execute("UPDATE evaluations SET state=? WHERE task_id=? AND state IN (?, ?)",
                       (CANCELLED, task_id, PENDING, RUNNING))

    def requeue(self, ids: Sequence[int]) -> None:
        with self._write() as db:
            db.executemany("UPDATE evaluations SET state=? WHERE id=? AND state=?", [(PENDING, i, RUNNING) for i in ids])

    def tasks_of(self, ids: Sequence[int]) -> list[str]:
        """The tasks these evaluations belong to."""
        with self._connect() as db:
            found = {db.execute("SELECT task_id FROM evaluations WHERE id=?", (i,)).fetchone()[0] for i in ids}
        return sorted(found)

    def verdict(self, key: str) -> str | None:
        with self._connect() as db:
            row = db.execute("SELECT trace FROM verdicts WHERE key=?", (key,)).fetchone()
        return row[0] if row else None

    # ------------------------------------------------------------------------------------------- reading
    def task(self, task_id: str, owner: str | None) -> TaskRow | None:
        """The task, if ``owner`` (None: anyone) submitted it."""
        with self._connect() as db:
            row = db.execute("SELECT id, owner, definition, solution_name, cancelled, error, created FROM tasks "
                             "WHERE id=?", (task_id,)).fetchone()
            if row is None or (owner is not None and row[1] != owner):
                return None
            counts = dict(db.execute("SELECT state, count(*) FROM evaluations WHERE task_id=? GROUP BY state",
                                     (task_id,)).fetchall())
            traces = db.execute("SELECT trace, cached FROM evaluations WHERE task_id=? AND state=? ORDER BY id",
                                (task_id, DONE)).fetchall()
        return TaskRow(row[0], row[1], row[2], row[3], bool(row[4]), row[5], row[6], counts,
                       tuple(t for t, _ in traces), sum(c for _, c in traces))

    def queued(self, owner: str | None = None) -> int:
        """Evaluations pending or running (of ``owner``, or of everyone)."""
        query = "SELECT count(*) FROM evaluations WHERE state IN (?, ?)"
        params: tuple[str, ...] = (PENDING, RUNNING)
        if owner is not None:
            query, params = query + " AND owner=?", (*params, owner)
        with self._connect() as db:
            return db.execute(query, params).fetchone()[0]
