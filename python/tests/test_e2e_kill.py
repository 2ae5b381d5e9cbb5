"""End to end: kill -9 of a Python replica (every process of a gunicorn
server running the Flask app under WSGIMonitor) while Python clients on
AsyncBindingTransport call an on-demand group: no call fails but those in
flight at the kill, and the killed replica's clients end bound to the
survivor (a Starlette app under uvicorn with ASGIMonitor)."""

from __future__ import annotations

from conftest import Balancer, wait_for
from e2e_harness import fleet  # noqa: F401 - the fixture
from e2e_harness import GROUP, GROUP_SETTINGS, Fleet, Load, replica_at, reported, stopping

# One client at 100 and three at 50 calls/s: the demo's rates.
RATES = [100.0, 50.0, 50.0, 50.0]
# Successful calls each client must make after the kill.
AFTER = 10


def test_kill9_of_a_python_replica_rebinds_its_clients(balancer: Balancer, fleet: Fleet) -> None:
    group = balancer.create_group(GROUP, **GROUP_SETTINGS)
    survivor = fleet.start("uvicorn")
    victim = fleet.start("gunicorn")
    try:
        wait_for("both replicas registered and reporting",
                 lambda: reported(balancer.group(GROUP), [survivor.address, victim.address]), timeout=20)
    except AssertionError as e:
        raise AssertionError(f"{e}\n{fleet.describe()}") from None

    with stopping(Load(group["advertise"], RATES, "async")) as load:
        # Clients bound to both replicas (at their first calls, or once the
        # analyzer has moved some), each having been served.
        wait_for(
            "clients bound to both replicas, every client served 5 times",
            lambda: (
                min(load.ok_since(0).values()) >= 5
                and {survivor.address, victim.address} <= set(load.last_served().values())
            ),
            timeout=20,
        )
        assert load.failures() == [], "calls failed before the kill"
        victims_clients = sorted(i for i, a in load.last_served().items() if a == victim.address)
        assert victims_clients, "no client bound to the replica to kill"

        kill = load.ledger.kill_replica(victim)

        wait_for(
            f"every client served {AFTER} times since the kill, each last by the survivor",
            lambda: (
                min(load.ok_since(kill.ended).values()) >= AFTER
                and set(load.last_served().values()) == {survivor.address}
            ),
            timeout=20,
        )
        # The balancer sees them there too: the survivor's reports count
        # every client as bound to it.
        wait_for(
            f"the survivor reporting {len(RATES)} bound clients",
            lambda: (replica_at(balancer.group(GROUP), survivor.address) or {}).get("bound_clients") == len(RATES),
            timeout=10,
        )
    calls = load.ledger.snapshot()  # complete: the load has stopped

    inflight = {(c.client, c.seq) for c in kill.inflight}
    failed = [c for c in calls if c.error]
    beyond = [c for c in failed if (c.client, c.seq) not in inflight]
    assert beyond == [], (
        f"calls failed that were not in flight at the kill ({len(inflight)} were; the kill took "
        f"[{kill.began:.3f}, {kill.ended:.3f}]): {beyond}"
    )
    during = [c for c in calls if kill.began <= c.began < kill.ended]
    assert during == [], f"calls began while the replica was being killed: {during}"
    after = [c for c in calls if c.began >= kill.ended]
    assert after and all(c.ok for c in after), f"calls begun after the kill failed: {[c for c in after if not c.ok]}"
    last = load.last_served()
    assert all(last[i] == survivor.address for i in victims_clients), f"the killed replica's clients {victims_clients} last served by {last}"
    print(f"killed {victim} (survivor {survivor}): {len(victims_clients)} of {len(RATES)} clients bound to it, "
          f"{len(inflight)} calls in flight, {len(failed)} failed: {[c.error for c in failed]}")
