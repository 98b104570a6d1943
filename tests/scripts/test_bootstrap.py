"""scripts/venv_with_torch.sh (the first step of bootstrap.sh): the new environment sees the torch of the
environment it is made from, a virtual environment's included; and scripts/which_timer.py names the timer."""

import os
import re
import subprocess
import sys

import torch
from helpers import REPO, child_env

SCRIPT = REPO / "scripts" / "venv_with_torch.sh"


def environment_with_fake_torch(folder):
    """A virtual environment (no system packages) whose python imports a fake torch."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    python = folder / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    torch = os.path.join(purelib, "torch")
    os.makedirs(torch)
    with open(os.path.join(torch, "__init__.py"), "w") as handle:
        handle.write('__version__ = "0.0.1+fake"\n')
    return python, torch


def make_venv(python, venv):
    return subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, timeout=120, check=True,
                          env={**os.environ, "PYTHON": str(python), "VENV": str(venv)})


def test_from_inside_a_virtual_environment_its_torch_is_seen(tmp_path):
    python, torch = environment_with_fake_torch(tmp_path / "active")
    done = make_venv(python, tmp_path / "project" / ".venv")
    assert done.stdout.strip() == f"torch: 0.0.1+fake from {torch}/__init__.py"
    inner = tmp_path / "project" / ".venv" / "bin" / "python"
    seen = subprocess.run([str(inner), "-c", "import torch, sys; print(torch.__file__); print(sys.prefix)"],
                          capture_output=True, text=True, check=True).stdout.split()
    assert seen == [f"{torch}/__init__.py", str(tmp_path / "project" / ".venv")]
    # run again on the environment made before: nothing changes
    assert make_venv(python, tmp_path / "project" / ".venv").stdout == done.stdout


def test_without_torch_none_is_said(tmp_path):
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "bare")], check=True)
    done = make_venv(tmp_path / "bare" / "bin" / "python", tmp_path / "project" / ".venv")
    assert done.stdout.strip() == "torch: none"


def test_which_timer_names_the_host_clock_on_the_cpu_and_cupti_or_cuda_events_on_a_gpu():
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "which_timer.py")], capture_output=True, text=True,
                          timeout=120, env=child_env())
    assert done.returncode == 0, done.stderr
    if not torch.cuda.is_available():
        assert done.stdout == "timer: host_clock (the host clock) on cpu\n", done.stderr
        return
    # On a GPU the device is named as the timing result names it: the card's name (seen on an H100).
    named = re.fullmatch(r"timer: (cupti \(CUPTI kernel records\)|cuda_events \(CUDA events\)) on (.+)\n",
                         done.stdout)
    assert named is not None and named[2] == torch.cuda.get_device_name(), done.stdout
    # Without CUPTI's records, why (and what would give them) is said.
    assert named[1].startswith("cupti") or "kernel times include launch gaps" in done.stderr, done.stderr


def test_bootstrap_refuses_an_unknown_purpose():
    done = subprocess.run(["bash", str(REPO / "scripts" / "bootstrap.sh"), "deploy"], capture_output=True, text=True)
    assert done.returncode == 2 and "usage:" in done.stderr
