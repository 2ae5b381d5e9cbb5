import json,glob,sys,statistics as st
pts=[]  # (excess, reduction) per strategy-round
flag={}
for f in sorted(glob.glob(sys.argv[1] + '/*/*/results.json') + glob.glob(sys.argv[1] + '/*/results.json')):
    d=json.load(open(f))
    for n in (2,4):
        rows=[x for x in d['rows'] if x['replicas']==n and abs(x['utilization']-0.9)<1e-9]
        if not rows or not rows[0].get('measured_utilization_rounds'): continue
        R=len(rows[0]['measured_utilization_rounds'])
        for k in range(R):
            med=st.median(x['measured_utilization_rounds'][k] for x in rows)
            for x in rows:
                if x['strategy']=='random' or not x.get('reduction_rounds'): continue
                ex=x['measured_utilization_rounds'][k]/med-1
                pts.append((ex,x['reduction_rounds'][k],x['strategy'],n))
# random's own excess matters too: reduction depends on random's round
print(len(pts))
for lo,hi in [(-1,-0.03),(-0.03,0.0),(0.0,0.03),(0.03,0.06),(0.06,1)]:
    sel=[r for e,r,s,n in pts if lo<=e<hi]
    if sel: print(f"excess [{lo:+.2f},{hi:+.2f}): n={len(sel):3d} median round reduction {st.median(sel)*100:6.1f}%  mean {st.mean(sel)*100:6.1f}%")
# random's excess vs the others' reductions
pts2=[]
for f in sorted(glob.glob(sys.argv[1] + '/*/*/results.json') + glob.glob(sys.argv[1] + '/*/results.json')):
    d=json.load(open(f))
    for n in (2,4):
        rows=[x for x in d['rows'] if x['replicas']==n and abs(x['utilization']-0.9)<1e-9]
        if not rows or not rows[0].get('measured_utilization_rounds'): continue
        R=len(rows[0]['measured_utilization_rounds'])
        rnd=[x for x in rows if x['strategy']=='random'][0]
        for k in range(R):
            med=st.median(x['measured_utilization_rounds'][k] for x in rows)
            ex=rnd['measured_utilization_rounds'][k]/med-1
            reds=[x['reduction_rounds'][k] for x in rows if x['strategy'] in ('ett','least-connections')]
            pts2.append((ex,st.mean(reds)))
print('random excess vs mean(ett,lc) round reduction')
for lo,hi in [(-1,-0.03),(-0.03,0.0),(0.0,0.03),(0.03,0.06),(0.06,1)]:
    sel=[r for e,r in pts2 if lo<=e<hi]
    if sel: print(f"random excess [{lo:+.2f},{hi:+.2f}): n={len(sel):3d} median {st.median(sel)*100:6.1f}%")
print('mean excess per strategy (all rounds, incl random)')
ex={}
for f in sorted(glob.glob(sys.argv[1] + '/*/*/results.json') + glob.glob(sys.argv[1] + '/*/results.json')):
    d=json.load(open(f))
    for n in (2,4):
        rows=[x for x in d['rows'] if x['replicas']==n and abs(x['utilization']-0.9)<1e-9]
        if not rows or not rows[0].get('measured_utilization_rounds'): continue
        R=len(rows[0]['measured_utilization_rounds'])
        for k in range(R):
            med=st.median(x['measured_utilization_rounds'][k] for x in rows)
            for x in rows:
                ex.setdefault((x['strategy'],n),[]).append(x['measured_utilization_rounds'][k]/med-1)
for k,v in sorted(ex.items()):
    print(k, 'mean %+.3f  median %+.3f  share>+0.03 %.2f' % (st.mean(v), st.median(v), sum(1 for e in v if e>0.03)/len(v)))
