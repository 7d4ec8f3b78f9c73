"""Issue 28 round 5: a question of several sentences scored by its best sentence too (max of the whole
question's support and each sentence's with at least MIN_TERMS content words), at the same label-free bars.
Usage: python issue28-r5-sentences.py DUMP_PREFIX [MIN_TERMS]  (DUMP_PREFIX-NAME.json from issue28-r5-dump.py)"""
import json,sys
tag=sys.argv[1]; minterms=int(sys.argv[2]) if len(sys.argv)>2 else 2
for name in ['django','git','scrapy','sqlalchemy','pdfqa','guide']:
    try: d=json.load(open(f'{tag}-{name}.json'))
    except FileNotFoundError: continue
    bar=d['bar']; rows=d['rows']
    def dec(r,new):
        if new < bar: return 'support'
        return r['reason_if_above']
    A=[r for r in rows if r['kind']=='A']; U=[r for r in rows if r['kind']=='U']
    base=lambda r: r['reason'] is None
    def newscore(r):
        v=[x['score'] for x in r['variants'] if x['terms']>=minterms]
        return max([r['score'],*v])
    new=lambda r: dec(r,newscore(r)) is None
    print(f"{name} bar {bar:.3f}: A {sum(map(base,A))}/{len(A)} -> {sum(map(new,A))}/{len(A)}; U abst {sum(not base(r) for r in U)}/{len(U)} -> {sum(not new(r) for r in U)}/{len(U)}")
    for r in rows:
        if r['variants']:
            flip = base(r)!=new(r)
            print(f"   {'FLIP' if flip else '    '} {r['kind']} {r['id']} {r['score']:.3f} -> {newscore(r):.3f} {r['q'][:80]}")
            if flip or r['kind']=='A':
                for x in r['variants']: print(f"        {x['score']:.3f} t{x['terms']} ev{x['ev'] or 0:.2f} top{x['topic'] or 0:.2f} lex{x['lex'] or 0:.2f} {x['text'][:70]}")
