"""A Flask replica with WSGIMonitor, configured from the environment:
FULCRUM_ADMIN, FULCRUM_GROUP, FULCRUM_ADDRESS (and WEB_CONCURRENCY for the
worker count). Served by gunicorn in the monitor tests."""

from __future__ import annotations

import os
import time

from flask import Flask

from fulcrum_client import WSGIMonitor

app = Flask(__name__)


@app.get("/work")
def work() -> str:
    time.sleep(0.002)  # the call's own work: 2 ms of latency
    return f"ok {os.getpid()}"


app.wsgi_app = WSGIMonitor(  # type: ignore[method-assign]
    app.wsgi_app,
    balancer=os.environ["FULCRUM_ADMIN"],
    group=os.environ["FULCRUM_GROUP"],
    address=os.environ["FULCRUM_ADDRESS"],
    interval=0.1,
)
