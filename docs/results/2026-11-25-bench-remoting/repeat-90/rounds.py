"""Per-round CPU excess against reduction, over the remoting runs below a directory.

    python3 rounds.py docs/results/2026-11-25-bench-remoting/repeat-90
"""
import glob
import json
import statistics as st
import sys


def rounds(root):
    """Yields (replicas, round, rows, median utilisation) for every 90% group round."""
    files = sorted(glob.glob(root + '/*/*/results.json') + glob.glob(root + '/*/results.json'))
    for f in files:
        d = json.load(open(f))
        for n in (2, 4):
            rows = [x for x in d['rows'] if x['replicas'] == n and abs(x['utilization'] - 0.9) < 1e-9]
            if not rows or not rows[0].get('measured_utilization_rounds'):
                continue
            for k in range(len(rows[0]['measured_utilization_rounds'])):
                med = st.median(x['measured_utilization_rounds'][k] for x in rows)
                yield n, k, rows, med


def table(title, pts):
    print(title)
    for lo, hi in [(-1, -0.03), (-0.03, 0.0), (0.0, 0.03), (0.03, 0.06), (0.06, 1)]:
        sel = [r for e, r in pts if lo <= e < hi]
        if sel:
            print(f"  excess [{lo:+.2f},{hi:+.2f}): n={len(sel):3d} median {st.median(sel)*100:6.1f}%  mean {st.mean(sel)*100:6.1f}%")


root = sys.argv[1]
own, base, per = [], [], {}
for n, k, rows, med in rounds(root):
    rnd = next(x for x in rows if x['strategy'] == 'random')
    for x in rows:
        ex = x['measured_utilization_rounds'][k] / med - 1
        per.setdefault((x['strategy'], n), []).append(ex)
        if x['strategy'] != 'random' and x.get('reduction_rounds'):
            own.append((ex, x['reduction_rounds'][k]))
    reds = [x['reduction_rounds'][k] for x in rows if x['strategy'] in ('ett', 'least-connections')]
    base.append((rnd['measured_utilization_rounds'][k] / med - 1, st.mean(reds)))
print(len(own), 'strategy-rounds')
table("a strategy's CPU excess over the round's median, against its reduction in the round", own)
table("random's CPU excess, against the mean of ett's and least-connections' reductions", base)
print('excess per strategy')
for key, v in sorted(per.items()):
    print(' ', key, 'mean %+.3f  median %+.3f  share above +0.03 %.2f' % (st.mean(v), st.median(v), sum(1 for e in v if e > 0.03) / len(v)))
