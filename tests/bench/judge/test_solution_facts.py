"""What the judge learns of a solution's code outlives the worker that ran it (judge/main.py ``facts_of``)."""

from types import SimpleNamespace

from flashinfer_bench.bench.judge import main as judge
from flashinfer_bench.bench.judge.main import Judge
from flashinfer_bench.bench.judge.remote import RemoteSolution


def item(name: str, content: str = "code") -> SimpleNamespace:  # what facts_of reads of a WorkItem
    return SimpleNamespace(solution_key=(name, content))


def test_a_refused_replay_is_known_to_the_next_item_of_the_same_code_in_any_worker(monkeypatch):
    monkeypatch.setattr(judge, "SOLUTION_FACTS_KEPT", 2)
    w = Judge(conn=None, device="cpu")
    # One item's handle, in one worker: its session asked for replays and got calls made one at a time.
    first = RemoteSolution(None, None, None, facts=w.facts_of(item("a")))
    assert not first.facts.replays_refused
    first.facts.replays_refused = True
    # The next item of the same code, in a new worker (the runner put another solution's item between them).
    assert not w.facts_of(item("b")).replays_refused
    assert RemoteSolution(None, None, None, facts=w.facts_of(item("a"))).facts.replays_refused
    assert not w.facts_of(item("a", "changed code")).replays_refused
    # Only the latest SOLUTION_FACTS_KEPT solutions' are kept: "b" was used least recently.
    assert list(w.solution_facts) == [("a", "code"), ("a", "changed code")]
