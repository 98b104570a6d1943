"""The reward of POST /verify, from the traces of one task (settings.RewardConfig states the formula), and
the solution a model wrote into a NeMo Gym response."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from typing import Any

from flashinfer_bench.serve.settings import RewardConfig

INCORRECT = {"INCORRECT_SHAPE", "INCORRECT_NUMERICAL", "INCORRECT_DTYPE"}
FENCED_JSON = re.compile(r"```(?:json)?\s*\n(.*?)```", re.DOTALL)


def evaluation_reward(evaluation: dict[str, Any], config: RewardConfig) -> float:
    status = evaluation.get("status")
    if status == "PASSED":
        speedup = float((evaluation.get("performance") or {}).get("speedup_factor") or 0.0)
        bonus = math.log2(min(max(speedup, 1.0), config.speedup_cap))
        return config.passed + config.speedup_weight * bonus
    return config.incorrect if status in INCORRECT else config.error


def reward(traces: Sequence[dict[str, Any]], config: RewardConfig) -> float:
    """The mean reward over the traces; ``config.error`` when there is none."""
    if not traces:
        return config.error
    return sum(evaluation_reward(t.get("evaluation") or {}, config) for t in traces) / len(traces)


def output_text(response: dict[str, Any]) -> str | None:
    """The last ``output_text`` of an OpenAI Responses object (NeMo Gym's ``response``)."""
    texts = [part.get("text") for item in response.get("output") or [] if isinstance(item, dict)
             for part in item.get("content") or [] if isinstance(part, dict) and part.get("type") == "output_text"]
    texts = [t for t in texts if isinstance(t, str)]
    return texts[-1] if texts else None


def solution_from_response(response: dict[str, Any]) -> dict[str, Any]:
    """The solution JSON the model wrote: the last fenced JSON block of its last output text, or that whole
    text. ValueError says what was missing."""
    text = output_text(response)
    if text is None:
        raise ValueError("response: no output_text in response.output")
    blocks = FENCED_JSON.findall(text)
    candidate = blocks[-1] if blocks else text
    try:
        data = json.loads(candidate)
    except json.JSONDecodeError as exc:
        raise ValueError(f"response: the last output text holds no solution JSON ({exc.msg})") from None
    if not isinstance(data, dict):
        raise ValueError("response: the solution JSON must be an object")
    return data
