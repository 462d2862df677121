"""The anchor: a fixed reference timed in every run, after its epochs, so that a database learns how this machine
drifts from one measuring session to the next without the user's model (``cpustudy.analysis.anchor``).

One core's worth of fixed work: NumPy's element-wise arithmetic over a 4 MiB array (memory and vector units,
single-threaded in NumPy) and a pure-Python loop (the interpreter on one core), three times, the fastest kept.
About 10 ms each (50 ms in all) on a 2-core Granite Rapids VM, after the run's timed epochs and before its peak: it never enters what the run
measured. Standard library at import; NumPy is imported when it runs (the framework has loaded it already).
"""

from __future__ import annotations

import time

#: The anchor's version: a changed kernel is another anchor, never compared with this one's seconds.
VERSION = 1


def anchor_s(repeats: int = 3) -> float:
    """Seconds of the fixed reference work, the fastest of ``repeats``."""
    import numpy as np

    a = np.arange(1 << 20, dtype=np.float32)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        total = 0.0
        for _ in range(8):
            total += float((a * np.float32(1.0001) + np.float32(0.5)).sum())
        x = 0
        for i in range(100_000):
            x += i * i
        best = min(best, time.perf_counter() - t0)
    return best
