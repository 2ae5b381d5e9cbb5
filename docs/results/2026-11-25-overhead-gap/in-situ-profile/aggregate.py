#!/usr/bin/env python3
"""Per-process symbol counts from a system-wide perf recording, and the
difference of one replica process against the mean of others.

    perf script -i perf.data -F pid,ip,sym | python3 aggregate.py CALLS HZ PID_BOUND PID_BASE [PID_BASE...]

CALLS is each configuration's calls, HZ the sampling frequency (-F)."""
import collections
import sys

calls, hz = int(sys.argv[1]), float(sys.argv[2])
bound, bases = sys.argv[3], sys.argv[4:]
counts = collections.defaultdict(collections.Counter)
pid = None
for line in sys.stdin:
    parts = line.split()
    if not parts:
        continue
    if pid is None or not line[0].isspace():
        # "PID IP SYM" (no call graph) or "PID" heading a call graph
        pid = parts[0]
        if len(parts) >= 3:
            counts[pid][parts[2]] += 1
        elif len(parts) == 2:
            counts[pid]["?"] += 1
base = collections.Counter()
for p in bases:
    for sym, n in counts[p].items():
        base[sym] += n / len(bases)
us = lambda n: n / hz / calls * 1e6
diff = {s: counts[bound][s] - base[s] for s in set(counts[bound]) | set(base)}
print(f"{bound}: {sum(counts[bound].values())} samples, bases {[sum(counts[p].values()) for p in bases]}; "
      f"+{us(sum(diff.values())):.2f} µs per call")
for sym, n in sorted(diff.items(), key=lambda kv: -kv[1])[:25]:
    print(f"{n:+8.0f} {us(n):+.3f} µs  {sym}")
