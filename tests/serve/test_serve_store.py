import pytest

from flashinfer_bench.serve.store import DONE, PENDING, RUNNING, NewTask, Store


def task(owner: str = "a", uuids: tuple[str, ...] = ("w1", "w2"), **kw) -> NewTask:
    return NewTask(owner, "d", "s_1234", "hash", "{}", uuids, **kw)


def test_a_task_is_pending_then_running_then_completed(tmp_path):
    store = Store(tmp_path / "s.sqlite3")
    (task_id,), new = store.add_tasks([task()])
    assert new and store.task(task_id, "a").status == "pending"
    ids = [e.id for e in store.pending_by_owner(10)["a"]]
    assert store.start(ids) == ids and store.task(task_id, "a").status == "running"
    assert store.finish(ids[:1], '{"t": 1}', cached=False, verdict_key="k") == 1
    assert store.finish(ids[:1], '{"t": 2}', cached=False, verdict_key=None) == 0  # done once
    store.finish(ids[1:], '{"t": 3}', cached=True, verdict_key=None)
    row = store.task(task_id, "a")
    assert (row.status, row.traces, row.cached, row.counts) == ("completed", ('{"t": 1}', '{"t": 3}'), 1, {DONE: 2})
    assert store.verdict("k") == '{"t": 1}' and store.verdict("other") is None


def test_another_owner_does_not_see_a_task(tmp_path):
    store = Store(tmp_path / "s.sqlite3")
    (task_id,), _ = store.add_tasks([task("a")])
    assert store.task(task_id, "b") is None and store.task(task_id, None) is not None
    assert not store.cancel(task_id, "b") and store.task(task_id, "a").status == "pending"


def test_an_idempotency_key_returns_the_first_tasks_and_refuses_another_request(tmp_path):
    store = Store(tmp_path / "s.sqlite3")
    first, new = store.add_tasks([task(), task()], idempotency=("a", "key", "h1"))
    again, new_again = store.add_tasks([task(), task()], idempotency=("a", "key", "h1"))
    assert new and not new_again and again == first and store.queued("a") == 4
    with pytest.raises(ValueError, match="different request"):
        store.add_tasks([task()], idempotency=("a", "key", "h2"))
    assert store.add_tasks([task("b")], idempotency=("b", "key", "h2"))[1]  # keys are per owner


def test_recover_puts_running_evaluations_back_and_keeps_done_ones(tmp_path):
    path = tmp_path / "s.sqlite3"
    store = Store(path)
    (task_id,), _ = store.add_tasks([task(uuids=("w1", "w2", "w3"))])
    ids = [e.id for e in store.pending_by_owner(10)["a"]]
    store.start(ids)
    store.finish(ids[:1], "{}", cached=False, verdict_key=None)
    reopened = Store(path)  # as a restarted server does
    assert reopened.recover() == 2
    assert reopened.task(task_id, "a").counts == {DONE: 1, PENDING: 2}


def test_cancel_leaves_running_evaluations_to_finish(tmp_path):
    store = Store(tmp_path / "s.sqlite3")
    (task_id,), _ = store.add_tasks([task(uuids=("w1", "w2"))])
    first = store.pending_by_owner(10)["a"][0].id
    store.start([first])
    assert store.cancel(task_id, "a")
    assert store.task(task_id, "a").counts == {RUNNING: 1, "cancelled": 1}
    store.finish([first], "{}", cached=False, verdict_key=None)
    assert store.task(task_id, "a").status == "cancelled"


def test_pending_evaluations_come_by_priority_then_in_order(tmp_path):
    store = Store(tmp_path / "s.sqlite3")
    store.add_tasks([task(uuids=("low",))])
    store.add_tasks([task(uuids=("high",), priority=5)])
    store.add_tasks([task(uuids=("low2",))])
    assert [e.workload_uuid for e in store.pending_by_owner(10)["a"]] == ["high", "low", "low2"]
