"""The replica apps' settings, from environment variables set by
e2e_harness.Replica:

- FULCRUM_BALANCER: the balancer's admin URL the monitor registers with.
- FULCRUM_GROUP: the group to join.
- FULCRUM_ADDRESS: this replica's own URL (http://127.0.0.1:PORT), as
  registered and as answered in "served_by".

A missing or empty variable is a RuntimeError naming it, at import.
"""

from __future__ import annotations

import os


def _required(name: str) -> str:
    value = os.environ.get(name, "")
    if not value:
        raise RuntimeError(f"apps.settings: environment variable {name} is not set (want a non-empty value)")
    return value


BALANCER = _required("FULCRUM_BALANCER")
GROUP = _required("FULCRUM_GROUP")
ADDRESS = _required("FULCRUM_ADDRESS")
