"""Each later fresh training (seeds 8011-8026, in gnr2-later-a.sqlite) against the intervals the comparisons stated,
its billed time as `cpustudy backtest` counts it (start-up + time to the target + the validation after each epoch):

* compare-a.json: a new database, one session (cpustudy baf90ea); compare-a-2.json: the same runs stated again by
  01b7e32 (the projection's own error added; its statements stored in the database);
* the database of the morning's check (reports/gnr2-two-sessions/, 13 sessions within 40 minutes) stated by
  5451ad0 (every speed run pooled as one session), by baf90ea and 01b7e32 (sessions as a random effect: 13
  independent draws) and by 0d35a3e (sessions less than an hour apart are one period).

    python count.py
"""

import json
import sqlite3
from pathlib import Path

here = Path(__file__).resolve().parent
db = sqlite3.connect(here / "gnr2-later-a.sqlite")
db.row_factory = sqlite3.Row
runs = db.execute("SELECT * FROM runs WHERE status = 'ok' AND seed BETWEEN 8011 AND 8026 ORDER BY id").fetchall()
for name in ("compare-a.json", "compare-a-2.json", "compare-b-5451ad0.json", "compare-b.json", "compare-b-2.json",
             "compare-b-0d35a3e.json"):
    stated = {c["candidate"]: c for c in json.loads((here / name).read_text())["candidates"]}
    inside = 0
    print(name)
    for r in runs:
        c = stated["here:1" if r["vcpus"] == 1 else "here:2"]
        val = r["validation_time_s"] or 0.0
        billed = (r["startup_s"] or 0.0) + r["time_to_target_s"] + (r["epochs_to_target"] or 0) * val
        ok = c["time_low_s"] <= billed <= c["time_high_s"]
        inside += ok
        print(f"  seed {r['seed']} {r['vcpus']} vCPU: {billed:5.1f} s in [{c['time_low_s']:.1f}-{c['time_high_s']:.1f}]"
              f" {'inside' if ok else 'OUTSIDE'}")
    print(f"  {inside} of {len(runs)} inside")
