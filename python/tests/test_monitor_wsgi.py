"""WSGIMonitor on a Flask app as a replica of a real fulcrum: under real
gunicorn (one worker, then two workers registering one replica), and under
werkzeug's threaded server in the test process for the advisory check
(where the test can read the advisory the monitor obeys)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from flask import Flask
from werkzeug.serving import make_server

from conftest import Balancer, wait_for
from fulcrum_client import WSGIMonitor
from fulcrum_client.asgi import rebind_location as asgi_location
from fulcrum_client.wsgi import rebind_location as wsgi_location
from monitor_helpers import bound_call, check_one_rebind_per_advisory, free_port, replica, reported

GROUP = "flask"
APPS = Path(__file__).parent / "apps"


class Gunicorn:
    """gunicorn serving tests/apps/flask_replica.py with n sync workers."""

    def __init__(self, b: Balancer, workers: int, tmp: Path) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        env = dict(os.environ, FULCRUM_ADMIN=b.admin, FULCRUM_GROUP=GROUP, FULCRUM_ADDRESS=self.base,
                   WEB_CONCURRENCY=str(workers), TMPDIR=str(tmp))
        self.log = (tmp / "gunicorn.log").open("w+")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "-w", str(workers), "-b", f"127.0.0.1:{self.port}",
             "--chdir", str(APPS), "--graceful-timeout", "5", "flask_replica:app"],
            env=env, stdout=self.log, stderr=subprocess.STDOUT)

    def output(self) -> str:
        self.log.seek(0)
        return self.log.read()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


@pytest.fixture
def flask_group(balancer: Balancer) -> Balancer:
    balancer.create_group(GROUP, report_interval="100ms")
    return balancer


def test_flask_under_gunicorn_registers_reports_and_deregisters(flask_group: Balancer, tmp_path: Path) -> None:
    b = flask_group
    g = Gunicorn(b, 1, tmp_path)
    try:
        r = wait_for("the gunicorn worker to register", lambda: replica(b, GROUP, g.base))
        assert r["monitor"] == "push"
        with httpx.Client(timeout=5) as http:
            def traffic() -> object:
                for _ in range(5):
                    resp = bound_call(http, g.base, GROUP, r["id"], "c-1")
                    assert resp.status_code == 200, resp.text
                return reported(b, GROUP, g.base)

            status = wait_for("a report with rps and latency", traffic)
        assert status["source"] == "report"
        assert status["latency_p50_ms"] >= 2.0
        assert status["bound_clients"] >= 1
        assert "worker" not in status.get("metrics", {})
    finally:
        g.stop()
    assert g.proc.returncode == 0, g.output()
    # The worker's atexit hook closed the monitor: the replica deregistered.
    gone = (replica(b, GROUP, g.base) or {"state": "gone"})["state"]
    assert gone in ("draining", "gone"), g.output()


def test_flask_sends_named_clients_back_once(flask_group: Balancer) -> None:
    b = flask_group
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    flask_app = Flask(__name__)

    @flask_app.get("/work")
    def work() -> str:
        time.sleep(0.002)
        return "ok"

    wrapped = WSGIMonitor(flask_app.wsgi_app, balancer=b.admin, group=GROUP, address=base, interval=0.1)
    server = make_server("127.0.0.1", port, wrapped, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        reg = wrapped.monitor.wait_registered(10)
        stop = threading.Event()
        check_one_rebind_per_advisory(b, GROUP, base, wrapped.monitor, reg.id, lambda: stop.wait(0.005))
    finally:
        server.shutdown()
        thread.join(10)
        wrapped.monitor.close()


def test_gunicorn_workers_register_one_replica(flask_group: Balancer, tmp_path: Path) -> None:
    b = flask_group
    g = Gunicorn(b, 2, tmp_path)
    try:
        r = wait_for("the gunicorn workers to register", lambda: replica(b, GROUP, g.base))
        pids: set[str] = set()

        def both() -> object:
            for _ in range(10):
                # A fresh connection per call (gunicorn's sync workers close
                # each one anyway): the kernel spreads them over both workers.
                resp = httpx.get(g.base + "/work", headers={"Fulcrum-Binding": f"{GROUP}/{r['id']}",
                                                            "Fulcrum-Client": f"c-{len(pids)}"})
                assert resp.status_code == 200, resp.text
                pids.add(resp.text.split()[1])
            return len(pids) == 2 and reported(b, GROUP, g.base)

        status = wait_for("both workers to serve and report", both)
        replicas = [x for x in b.group(GROUP)["replicas"] if x["address"] == g.base]
        assert len(replicas) == 1, replicas
        assert status["id"] == r["id"]
        assert status["source"] == "report"
        # Both workers' reports are combined into the replica's.
        assert wait_for("both workers' reports", lambda: (replica(b, GROUP, g.base) or {}).get("workers")
                        == {"count": 2, "reporting": 2})
    finally:
        g.stop()
    assert g.proc.returncode == 0, g.output()
    # Workers do not deregister the replica (it is their siblings' too),
    # as the Go monitor's workers do not.
    assert (replica(b, GROUP, g.base) or {}).get("state") == "active", g.output()


def test_rebind_location_keeps_the_path_and_query_as_sent() -> None:
    fd = "http://lb:8000"
    # PEP 3333: PATH_INFO holds the request's bytes decoded as latin-1.
    environ = {"SCRIPT_NAME": "/app", "PATH_INFO": "/café".encode().decode("latin-1"), "QUERY_STRING": "q=a%20b"}
    assert wsgi_location(fd, environ) == fd + "/app/caf%C3%A9?q=a%20b"
    assert wsgi_location(fd, {**environ, "RAW_URI": "/app/caf%C3%A9?q=a%20b&x"}) == fd + "/app/caf%C3%A9?q=a%20b&x"
    scope = {"path": "/café", "raw_path": b"/caf%C3%A9", "query_string": b"q=1"}
    assert asgi_location(fd, scope) == fd + "/caf%C3%A9?q=1"
    assert asgi_location(fd, {"path": "/a b", "query_string": b""}) == fd + "/a%20b"
