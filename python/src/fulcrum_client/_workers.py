"""Which worker of a multi-process replica this process is.

gunicorn and uvicorn do not number their workers stably, so each worker
claims one of count slots: an exclusive, non-blocking fcntl.flock on
slot-<i>.lock in a directory that the workers of one replica share (by
default under the system's temporary directory, named after the group and
address). The lock is held for the life of the process and released by the
kernel when it exits, so a worker that the server restarts takes the slot
its predecessor left. When every slot is held (a server replacing its
workers starts the new ones before the old ones exit), the monitor tries
again until one is freed.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from fulcrum_client.protocol import MAX_WORKERS


class NoFreeSlotError(RuntimeError):
    """Every slot of the replica's directory is held by a live process."""


@dataclass
class Slot:
    """A claimed slot: index of count, held while fd stays open."""

    index: int
    count: int
    path: Path
    fd: int

    def release(self) -> None:
        """Gives the slot up (closing the file releases the lock)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def slot_dir(group: str, address: str) -> Path:
    """The default directory the workers of one replica share."""
    key = hashlib.sha256(f"{group}\n{address}".encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"fulcrum-workers-{key}"


def claim_slot(directory: Path, count: int) -> Slot:
    """Claims the first free of count slots in directory (created if
    missing). NoFreeSlotError when all are held; ValueError for a count
    outside [1, MAX_WORKERS]."""
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_WORKERS:
        raise ValueError(f"monitor: workers {count!r}: must be a whole number in [1, {MAX_WORKERS}]")
    directory.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        slot = _try_lock(directory, i)
        if slot is not None:
            return Slot(index=i, count=count, path=slot[0], fd=slot[1])
    raise NoFreeSlotError(
        f"monitor: all {count} worker slots in {directory} are held by live processes "
        f"(old workers still exiting, or more workers than workers/WEB_CONCURRENCY says)"
    )


def workers_from_env(environ: dict[str, str] | None = None) -> int:
    """The worker count from WEB_CONCURRENCY (read by gunicorn and uvicorn
    as their default worker count), else 1. ValueError names a bad value."""
    env = os.environ if environ is None else environ
    raw = env.get("WEB_CONCURRENCY", "").strip()
    if not raw:
        return 1
    try:
        n = int(raw)
    except ValueError:
        raise ValueError(f"monitor: WEB_CONCURRENCY {raw!r}: must be a whole number in [1, {MAX_WORKERS}]") from None
    if not 1 <= n <= MAX_WORKERS:
        raise ValueError(f"monitor: WEB_CONCURRENCY {raw!r}: must be a whole number in [1, {MAX_WORKERS}]")
    return n


def _try_lock(directory: Path, index: int) -> tuple[Path, int] | None:
    import fcntl  # POSIX only: imported here so that the monitor imports elsewhere

    path = directory / f"slot-{index}.lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    os.set_inheritable(fd, False)
    return path, fd

