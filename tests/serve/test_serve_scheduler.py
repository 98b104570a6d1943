"""The scheduler's choice of evaluations (its ``pick``, on a real store; no evaluation runs here)."""

from collections import Counter

from flashinfer_bench.serve.scheduler import Scheduler
from flashinfer_bench.serve.store import NewTask, Store


def submit(store: Store, owner: str, n: int, *, name: str = "s_1", content: str = "h1") -> None:
    store.add_tasks([NewTask(owner, "d", name, content, "{}", tuple(f"{owner}{i}" for i in range(n)))])


def scheduler(store: Store, batch_size: int) -> Scheduler:
    return Scheduler(store, engine=None, batch_size=batch_size, on_change=lambda: None)  # type: ignore[arg-type]


def test_tokens_are_served_in_turn_however_much_one_has_queued(tmp_path):
    store = Store(tmp_path / "s.sqlite3")
    submit(store, "greedy", 50)
    submit(store, "small", 2)
    batch = scheduler(store, 4).pick()
    assert Counter(e.owner for e in batch) == {"greedy": 2, "small": 2}


def test_the_token_served_longest_ago_goes_first(tmp_path):
    store = Store(tmp_path / "s.sqlite3")
    submit(store, "a", 10)
    submit(store, "b", 10)
    chooser = scheduler(store, 1)
    owners = []
    for _ in range(4):
        (evaluation,) = chooser.pick()
        store.start([evaluation.id])
        owners.append(evaluation.owner)
    assert owners in (["a", "b", "a", "b"], ["b", "a", "b", "a"])


def test_two_solutions_of_one_name_and_different_code_never_share_a_batch(tmp_path):
    store = Store(tmp_path / "s.sqlite3")
    submit(store, "a", 2, name="same", content="h1")
    submit(store, "b", 2, name="same", content="h2")
    batch = scheduler(store, 10).pick()
    assert {e.solution_hash for e in batch} == {"h1"} and len(batch) == 2
