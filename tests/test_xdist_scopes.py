"""How scripts/test.sh's pytest-xdist workers share the tests (tests/xdist_scopes.py): the files named there exist,
the Ray tests share one worker, the dataset tests are handed out one by one, any other file's tests stay together."""

from helpers import REPO
from xdist_scopes import APART, TOGETHER, scope_of


def test_the_files_named_exist():
    for path in [*TOGETHER, *APART]:
        assert (REPO / path).is_file(), path


def test_each_file_is_one_scope_but_those_grouped_or_apart():
    ray = [f"{path}::test_x" for path, group in TOGETHER.items() if group == "ray"]
    assert len(ray) == 2 and len({scope_of(nodeid) for nodeid in ray}) == 1
    dataset = "tests/dataset/test_dataset_references.py::test_reference_passes_and_perturbed_copy_fails"
    assert scope_of(f"{dataset}[moe]") != scope_of(f"{dataset}[gemm]")
    assert scope_of("tests/client/test_client.py::test_a") == scope_of("tests/client/test_client.py::test_b[1]") \
        == "tests/client/test_client.py"
