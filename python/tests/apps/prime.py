"""The prime service's work, shared by both apps: "is n prime" by trial
division up to √n, the TAO paper's CPU-bound call (internal/backend/prime.go
in Go). n = 1_000_003 costs about 500 divisions: a small, real CPU cost per
call."""

from __future__ import annotations

from typing import Any

# MAX_N bounds n so that one call stays below a few milliseconds.
MAX_N = 1 << 40


def is_prime(n: int) -> bool:
    """Whether n is prime, by trial division."""
    if n < 2:
        return False
    if n % 2 == 0:
        return n == 2
    d = 3
    while d * d <= n:
        if n % d == 0:
            return False
        d += 2
    return True


def answer(raw: str, served_by: str) -> tuple[int, dict[str, Any]]:
    """The status and JSON body of GET /prime/{raw}: 200 with n, prime and
    served_by, or 400 naming the bad value."""
    try:
        n = int(raw)
    except ValueError:
        return 400, {"error": f"prime: n {raw!r} is not a whole number"}
    if not 0 <= n <= MAX_N:
        return 400, {"error": f"prime: n {n} out of range, want [0, {MAX_N}]"}
    return 200, {"n": n, "prime": is_prime(n), "served_by": served_by}
