"""What the parent shows a worker besides the system's directories: here, the compilers' installs."""

import os
import stat

from flashinfer_bench.bench.runner.worker_view import toolchain_paths


def test_a_compiler_installed_outside_the_system_directories_is_shown(tmp_path, monkeypatch):
    """A gcc in /opt/gcc (as on the GPU machines) is found through PATH, and its install (the folder above
    ``bin``) is shown, so that Triton's launcher and torch extensions still build in the worker's view."""
    home = tmp_path / "opt" / "gcc"
    (home / "bin").mkdir(parents=True)
    compiler = home / "bin" / "gcc"
    compiler.write_text("#!/bin/sh\nexit 0\n")
    compiler.chmod(compiler.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{home / 'bin'}{os.pathsep}{os.environ['PATH']}")
    assert str(home) in toolchain_paths()
    monkeypatch.setenv("CC", str(compiler))
    assert str(home) in toolchain_paths()


def test_compilers_of_the_system_directories_add_nothing(monkeypatch):
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.delenv("CC", raising=False)
    monkeypatch.delenv("CXX", raising=False)
    assert toolchain_paths() == ()
