"""fulcrum's wire contract, as the Go package protocol states it: header
names, limits and the worker split of multi-process replicas."""

from __future__ import annotations

HEADER_GROUP = "Fulcrum-Group"
HEADER_REPLICA = "Fulcrum-Replica"
HEADER_BINDING = "Fulcrum-Binding"
HEADER_CLIENT = "Fulcrum-Client"
HEADER_REBIND = "Fulcrum-Rebind"
HEADER_ADVISORY = "Fulcrum-Advisory"
HEADER_PROBE = "Fulcrum-Probe"
HEADER_COST = "Fulcrum-Cost"
# Replicated groups' call identity (protocol/replication.go).
HEADER_SESSION = "Fulcrum-Session"
HEADER_SEQUENCE = "Fulcrum-Sequence"
HEADER_POSITION = "Fulcrum-Position"
HEADER_IDEMPOTENCY_KEY = "Idempotency-Key"

REBIND_UNREACHABLE = "unreachable"
MAX_CLIENT_ID_LENGTH = 128
MAX_REPORT_CLIENTS = 1024
MAX_REPORT_BYTES = 256 << 10
MAX_WORKERS = 1024

NOMINAL = "nominal"
HIGH = "high"
DRAIN = "drain"

_FNV64_OFFSET = 0xCBF29CE484222325
_FNV64_PRIME = 0x100000001B3
_MASK64 = (1 << 64) - 1


def client_hash(client_id: str) -> int:
    """The 64-bit FNV-1a hash of a client id's UTF-8 bytes."""
    h = _FNV64_OFFSET
    for b in client_id.encode("utf-8"):
        h ^= b
        h = (h * _FNV64_PRIME) & _MASK64
    return h


def worker_of(client_id: str, count: int) -> int:
    """The worker of a count-worker replica that owns a client:
    client_hash(client_id) % count (count < 1 is taken as 1)."""
    if count < 1:
        return 0
    return client_hash(client_id) % count
