"""How scripts/test.sh's pytest-xdist workers share the tests (``--dist loadfile``, refined in tests/conftest.py)."""

from __future__ import annotations

#: Under ``--dist loadfile`` each file's tests run on one worker, one after another (a module-scoped fixture is
#: set up once; tests may build on one another), except that these files share a worker with the others of their
#: group ...
TOGETHER = {
    # one local Ray cluster at a time: two would compete for the host's ports, and these tests look for the
    # cluster's processes by name
    "tests/bench/runner/test_ray_runner.py": "ray",
    "tests/serve/test_serve_ray.py": "ray",
    # the adversarial set's C++ extension is compiled once, into the worker's build cache (tests/conftest.py)
    "tests/bench/runner/test_adversarial_fixture.py": "adversarial trace set",
    "tests/serve/test_serve_parity.py": "adversarial trace set",
}
#: ... and the tests of these files, independent of one another and minutes long, are handed out one by one.
APART = frozenset({"tests/dataset/test_dataset_references.py"})


def file_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def scope_of(nodeid: str) -> str:
    """The unit of work a test belongs to: xdist hands each to one worker, whose tests run one after another."""
    path = file_of(nodeid)
    return nodeid if path in APART else TOGETHER.get(path, path)
