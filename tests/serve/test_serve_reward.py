import math

import pytest

from flashinfer_bench.serve.reward import reward, solution_from_response
from flashinfer_bench.serve.settings import RewardConfig


def trace(status: str, speedup: float = 0.0) -> dict:
    evaluation = {"status": status}
    if status == "PASSED":
        evaluation["performance"] = {"latency_ms": 1.0, "reference_latency_ms": speedup, "speedup_factor": speedup}
    return {"evaluation": evaluation}


def test_the_default_formula():
    config = RewardConfig()
    assert reward([trace("PASSED", 4.0)], config) == pytest.approx(3.0)  # 1 + log2(4)
    assert reward([trace("PASSED", 0.5)], config) == 1.0  # slower than the reference: no bonus, no penalty
    assert reward([trace("PASSED", 1000.0)], config) == pytest.approx(1 + math.log2(16))  # capped
    assert reward([trace("PASSED", 4.0), trace("TIMEOUT")], config) == pytest.approx(1.5)
    assert reward([], config) == 0.0


def test_the_formula_is_configurable():
    config = RewardConfig(passed=0.5, speedup_weight=0.0, incorrect=-0.5, error=-1.0)
    assert reward([trace("PASSED", 8.0)], config) == 0.5
    assert reward([trace("INCORRECT_NUMERICAL")], config) == -0.5
    assert reward([trace("COMPILE_ERROR")], config) == -1.0
    with pytest.raises(ValueError, match="speedup_cap"):
        RewardConfig(speedup_cap=0.5)
    with pytest.raises(ValueError, match="finite"):
        RewardConfig(passed=math.inf)


def test_the_solution_is_the_last_json_block_of_the_last_output_text():
    response = {"output": [
        {"type": "message", "content": [{"type": "output_text", "text": "draft ```json\n{\"name\": \"old\"}\n```"}]},
        {"type": "message", "content": [{"type": "output_text",
                                         "text": "Here:\n```json\n{\"name\": \"a\"}\n```\nand\n```json\n{\"name\": \"b\"}\n```"}]},
    ]}
    assert solution_from_response(response) == {"name": "b"}
    assert solution_from_response({"output": [{"content": [{"type": "output_text", "text": "{\"x\": 1}"}]}]}) == {"x": 1}
    with pytest.raises(ValueError, match="no output_text"):
        solution_from_response({"output": []})
    with pytest.raises(ValueError, match="no solution JSON"):
        solution_from_response({"output": [{"content": [{"type": "output_text", "text": "no code here"}]}]})
