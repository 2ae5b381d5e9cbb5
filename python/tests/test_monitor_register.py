"""Registration against a real fulcrum whose group needs a join token:
refusals are counted and the monitor gives up; the right token
registers, and closing deregisters."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import Balancer, wait_for
from fulcrum_client.monitor import Monitor, MonitorError
from monitor_helpers import free_port, replica


@pytest.fixture
def locked(fulcrum_bin: str, tmp_path: Path) -> Iterator[Balancer]:
    """A balancer with an admin token: registering needs a join token."""
    b = Balancer(fulcrum_bin, tmp_path, config="admin_token: admin-secret\n")
    b.api.headers["Authorization"] = "Bearer admin-secret"
    yield b
    b.stop()


def test_refused_registrations_give_up_and_the_join_token_registers(locked: Balancer) -> None:
    balancer = locked
    balancer.create_group("locked", join_token="join-secret", report_interval="100ms")
    address = f"http://127.0.0.1:{free_port()}"
    refused = Monitor(balancer=balancer.admin, group="locked", address=address, register_attempts=2)
    refused.start()
    try:
        assert refused.failed.wait(10), "the monitor did not give up"
        assert "gave up registering after 2 refused attempts" in str(refused.err)
        assert "401" in str(refused.err)
        with pytest.raises(MonitorError, match="gave up"):
            refused.wait_registered(1)
        assert replica(balancer, "locked", address) is None
    finally:
        refused.close()

    mon = Monitor(balancer=balancer.admin, group="locked", address=address, join_token="join-secret", interval=0.1)
    mon.start()
    try:
        reg = mon.wait_registered(10)
        assert reg.front_door == balancer.group("locked")["advertise"].rstrip("/")
        wait_for("a report", lambda: (replica(balancer, "locked", address) or {}).get("source") == "report")
        assert mon.interval == 0.1  # the group's report_interval, adopted
    finally:
        mon.close()
    state = (replica(balancer, "locked", address) or {"state": "gone"})["state"]
    assert state in ("draining", "gone")
