"""Every Python example in README.md runs as written, as a script file (the way a reader pastes it), on a tiny
trace set in place of the README's placeholder path."""

import re
import subprocess
import sys

from helpers import REPO, child_env, scale_add_set

PLACEHOLDER = "/path/to/flashinfer-trace"


def readme_examples() -> list[str]:
    return re.findall(r"```python\n(.*?)```", (REPO / "README.md").read_text(), re.S)


def test_the_readme_has_its_examples():
    examples = readme_examples()
    assert len(examples) == 2 and PLACEHOLDER in examples[0]


def test_every_python_example_runs_as_a_script(tmp_path):
    root = scale_add_set(tmp_path / "set", {"ok": "def run(x, y):\n    return x * 2 + y\n"}, sizes=(8,))
    for index, example in enumerate(readme_examples()):
        script = tmp_path / f"example_{index}.py"
        script.write_text(example.replace(PLACEHOLDER, str(root)))
        done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=600,
                              cwd=tmp_path, env=child_env())
        assert done.returncode == 0, (example, done.stderr[-3000:])
        assert "Traceback" not in done.stderr
    # the benchmark example wrote its verdict
    assert list((root / "traces").rglob("*.jsonl"))
