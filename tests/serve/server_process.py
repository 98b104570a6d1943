"""A real `flashinfer-bench serve` in a subprocess on 127.0.0.1, for the serve and client tests."""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
from helpers import child_env

#: The small evaluation every test asks for (CPU).
FAST = ["--warmup-runs", "1", "--iterations", "3", "--num-trials", "1"]
READY_S = 240.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class ServerProcess:
    def __init__(self, root: Path, workdir: Path, *, tokens: int = 2, args: tuple[str, ...] = (),
                 store: Path | None = None):
        self.root = root
        self.tokens = [secrets.token_hex(16) for _ in range(tokens)]
        self.token_file = workdir / "tokens"
        self.token_file.write_text("# test tokens\n" + "\n".join(self.tokens) + "\n")
        self.store = store or workdir / "store.sqlite3"
        self.log = workdir / "server.log"
        self.args = args
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ServerProcess:
        self.port = free_port()
        command = [sys.executable, "-m", "flashinfer_bench.cli.main", "serve", "--local", str(self.root),
                   "--port", str(self.port), "--token-file", str(self.token_file), "--store", str(self.store),
                   *FAST, *self.args]
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=child_env(),
                                            start_new_session=True)
        deadline = time.monotonic() + READY_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the server exited with {self.process.returncode}:\n{self.log.read_text()}")
            try:
                if httpx.get(f"{self.url}/health", timeout=2).status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            time.sleep(0.3)
        raise RuntimeError(f"the server did not answer within {READY_S} s:\n{self.log.read_text()}")

    def http(self, token: str | None = "first") -> httpx.Client:
        token = self.tokens[0] if token == "first" else token
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=60)

    def kill(self) -> None:
        """SIGKILL, to the server process alone (what it started dies with it)."""
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(30)

    def stop(self) -> None:
        """SIGTERM and wait; then make sure nothing of the group it leads is left."""
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(30)
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process = None
