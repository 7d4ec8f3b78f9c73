"""Two `ragcore eval --out` files of one data set (main's code, this branch's) as one report whose base is the
first, so `python -m ragcore.eval.compare` pairs them question by question.
Usage: python issue28-r4-merge.py BEFORE.json AFTER.json OUT.json"""
import json
import sys

before, after = (json.load(open(p)) for p in sys.argv[1:3])
b, a = before["runs"][0], after["runs"][0]
b["label"], a["label"] = "before (main 05d460e)", "after (abstain15)"
before["runs"] = [b, a]
before["base_label"] = b["label"]
json.dump(before, open(sys.argv[3], "w"))
