"""The engine's stored-verdict keys and names (no runner is started here)."""

from helpers import SCALE_ADD, python_solution, scale_add_set

from flashinfer_bench.bench import BenchmarkConfig
from flashinfer_bench.data import Solution, TraceSet
from flashinfer_bench.serve.engine import Engine, normalized_name


def engine(root, **config) -> Engine:
    return Engine(TraceSet.from_path(root, load_traces=False), BenchmarkConfig(**config))


def test_a_key_changes_with_everything_a_verdict_depends_on(tmp_path):
    root = scale_add_set(tmp_path / "a", {})
    base = engine(root, iterations=3)
    key = base.verdict_key("scale_add", "hash", "w8")
    assert key == engine(root, iterations=3).verdict_key("scale_add", "hash", "w8")
    assert key != base.verdict_key("scale_add", "other-hash", "w8")
    assert key != base.verdict_key("scale_add", "hash", "w100")
    assert key != engine(root, iterations=4).verdict_key("scale_add", "hash", "w8")
    assert key != engine(root, iterations=3, timeout_seconds=7).verdict_key("scale_add", "hash", "w8")
    edited = tmp_path / "b"
    scale_add_set(edited, {})
    definition = edited / "definitions" / "elementwise" / "scale_add.json"
    definition.write_text(definition.read_text().replace(SCALE_ADD["reference"].splitlines()[-1].strip(),
                                                         "return y + x * 2"))
    assert "return y + x * 2" in definition.read_text()
    assert key != engine(edited, iterations=3).verdict_key("scale_add", "hash", "w8")


def test_the_normalized_name_follows_the_code_not_the_name():
    one = Solution.model_validate(python_solution("same", "def run(x, y):\n    return x\n"))
    other = Solution.model_validate(python_solution("same", "def run(x, y):\n    return y\n"))
    renamed = one.model_copy(update={"name": "renamed"})
    assert normalized_name(one) != normalized_name(other)
    assert normalized_name(one).startswith("same_") and normalized_name(renamed)[-8:] == normalized_name(one)[-8:]
