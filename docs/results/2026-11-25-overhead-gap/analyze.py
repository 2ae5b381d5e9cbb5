import csv,sys,statistics as st,collections
# analyze.py DIR [base]: per-config median per-round throughput ratio to base, and by position in round
d=sys.argv[1]; base=sys.argv[2] if len(sys.argv)>2 else 'direct'
rows=list(csv.DictReader(open(d+'/overhead-rounds.csv')))
names=[]
for r in rows:
    if r['name'] not in names: names.append(r['name'])
by=collections.defaultdict(dict)
for r in rows: by[r['name']][int(r['round'])]=float(r['throughput_rps'])
n=len(names); R=max(by[base])
print('config            med   mean  q25   q75   (throughput / %s per round)'%base)
for c in names:
    rs=[by[c][i]/by[base][i] for i in range(1,R+1) if i in by[c]]
    q=st.quantiles(rs,n=4)
    print('%-16s %.3f %.3f %.3f %.3f'%(c,st.median(rs),st.mean(rs),q[0],q[2]))
# position: in round r (1-based) config index i runs at position (i-(r-1)) mod n
pos=collections.defaultdict(list)
for r in range(1,R+1):
    m=st.mean(by[c][r] for c in names)
    for i,c in enumerate(names):
        pos[(i-(r-1))%n].append(by[c][r]/m)
print('position: mean throughput / round mean:', ' '.join('%d:%.3f'%(p,st.mean(v)) for p,v in sorted(pos.items())))
