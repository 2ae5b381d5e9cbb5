"""fulcrum's Python SDK: a client transport that follows fulcrum's binding
protocol, and a server monitor that reports a replica's load.

Client (docs/python.md "Client")::

    import httpx
    from fulcrum_client import BindingTransport

    client = httpx.Client(transport=BindingTransport(front_doors=["http://lb:8000"]))

Monitor (docs/python.md "Monitor")::

    from fulcrum_client import ASGIMonitor
    app = ASGIMonitor(app, balancer="http://lb:7070", group="api", address="http://10.0.0.5:9000")
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# Public names and the module each lives in; imported on first use so that
# a client does not import the monitor's dependencies and the reverse.
_EXPORTS = {
    "BindingTransport": "fulcrum_client.transport",
    "AsyncBindingTransport": "fulcrum_client.transport",
    "FulcrumAdapter": "fulcrum_client.requests_adapter",
    "Monitor": "fulcrum_client.monitor",
    "ASGIMonitor": "fulcrum_client.asgi",
    "WSGIMonitor": "fulcrum_client.wsgi",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from fulcrum_client.asgi import ASGIMonitor
    from fulcrum_client.monitor import Monitor
    from fulcrum_client.requests_adapter import FulcrumAdapter
    from fulcrum_client.transport import AsyncBindingTransport, BindingTransport
    from fulcrum_client.wsgi import WSGIMonitor


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'fulcrum_client' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
