"""Shared fixtures: the real fulcrum binary, built by the test command
(FULCRUM_BIN) or here, and balancers started from it on free ports."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

REPO = Path(__file__).resolve().parents[2]
ADMIN_RE = re.compile(r"admin=(\S+)")


@pytest.fixture(scope="session")
def fulcrum_bin(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Path of the fulcrum binary: $FULCRUM_BIN, else built with go."""
    path = os.environ.get("FULCRUM_BIN")
    if path:
        if not os.access(path, os.X_OK):
            pytest.fail(f"FULCRUM_BIN={path} is not an executable file")
        return path
    go = shutil.which("go")
    if go is None:
        pytest.fail("neither FULCRUM_BIN nor a go command to build fulcrum with")
    out = tmp_path_factory.mktemp("bin") / "fulcrum"
    subprocess.run([go, "build", "-o", str(out), "./cmd/fulcrum"], cwd=REPO, check=True)
    return str(out)


class Balancer:
    """A running `fulcrum serve` on a free admin port, with its own data
    directory; stopped (SIGTERM, then SIGKILL) by the fixture."""

    def __init__(self, binary: str, workdir: Path, config: str | None = None) -> None:
        self.workdir = workdir
        args = [binary, "serve", "--admin", "127.0.0.1:0", "--data-dir", str(workdir / "data")]
        if config is not None:
            cfg = workdir / "fulcrum.yaml"
            cfg.write_text(config)
            args += ["--config", str(cfg)]
        self._stderr: list[str] = []
        self._found = threading.Event()
        self.admin = ""
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        threading.Thread(target=self._read, daemon=True).start()
        if not self._found.wait(15) or not self.admin:
            self.stop()
            raise RuntimeError("fulcrum serve did not log its admin address:\n" + self.log())
        self.api = httpx.Client(base_url=self.admin, timeout=10)

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self._stderr.append(line)
            if not self.admin:
                m = ADMIN_RE.search(line)
                if m:
                    self.admin = m.group(1)
                    self._found.set()
        self._found.set()

    def log(self) -> str:
        return "".join(self._stderr)

    def create_group(self, name: str, **settings: Any) -> dict[str, Any]:
        """PUT /v1/groups/{name} with front_door 127.0.0.1:0 unless given;
        returns the group's status (its "advertise" is the front door URL)."""
        body = {"front_door": "127.0.0.1:0", **settings}
        r = self.api.put(f"/v1/groups/{name}", json=body)
        r.raise_for_status()
        return self.group(name)

    def group(self, name: str) -> dict[str, Any]:
        r = self.api.get(f"/v1/groups/{name}")
        r.raise_for_status()
        status: dict[str, Any] = r.json()
        return status

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if hasattr(self, "api"):
            self.api.close()


@pytest.fixture
def balancer(fulcrum_bin: str, tmp_path: Path) -> Iterator[Balancer]:
    """A fresh balancer with no groups."""
    b = Balancer(fulcrum_bin, tmp_path)
    yield b
    b.stop()


def wait_for(what: str, cond: Any, timeout: float = 15.0, interval: float = 0.05) -> Any:
    """Polls cond() until it returns a true value (returned) or timeout
    passes (AssertionError naming what). For state that can only be
    observed by asking, such as a balancer's replica list."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = cond()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")
