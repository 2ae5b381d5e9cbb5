"""The prime service as a Flask app under fulcrum_client's WSGIMonitor
(run by gunicorn: `gunicorn apps.prime_wsgi:app`)."""

from __future__ import annotations

from flask import Flask, Response, jsonify

from apps import settings
from apps.prime import answer
from fulcrum_client.wsgi import WSGIMonitor

flask_app = Flask(__name__)


@flask_app.get("/prime/<raw>")
def prime(raw: str) -> tuple[Response, int]:
    status, body = answer(raw, settings.ADDRESS)
    return jsonify(body), status


@flask_app.get("/healthz")
def healthz() -> str:
    return "ok"


app = WSGIMonitor(
    flask_app,
    balancer=settings.BALANCER,
    group=settings.GROUP,
    address=settings.ADDRESS,
)
