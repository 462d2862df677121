import os, sys, time, json
os.sched_setaffinity(0, {int(sys.argv[1]) if len(sys.argv) > 1 else 0})
os.environ["TF_NUM_INTRAOP_THREADS"] = "1"; os.environ["TF_NUM_INTEROP_THREADS"] = "1"
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"; os.environ["OMP_NUM_THREADS"] = "1"
cpu = int(sys.argv[1]) if len(sys.argv) > 1 else 0
def steal():
    for line in open("/proc/stat"):
        if line.startswith(f"cpu{cpu} "):
            return int(line.split()[8]) / os.sysconf("SC_CLK_TCK")
import numpy as np
def probe(budget=0.6):
    a = np.random.default_rng(0).standard_normal((384, 384)).astype("float32")
    b = a.copy(); best = 1e9; t_end = time.perf_counter() + budget
    while time.perf_counter() < t_end:
        t = time.perf_counter(); a @ b; best = min(best, time.perf_counter() - t)
    return 2 * 384**3 / best / 1e9
def scalar_probe(budget=0.3):
    best = 1e9; t_end = time.perf_counter() + budget
    while time.perf_counter() < t_end:
        t = time.perf_counter(); s = 0
        for i in range(20000): s += i * i
        best = min(best, time.perf_counter() - t)
    return 20000 / best / 1e6
s0 = steal(); p0 = probe(); q0 = scalar_probe()
import tensorflow as tf, keras
tf.config.threading.set_intra_op_parallelism_threads(1); tf.config.threading.set_inter_op_parallelism_threads(1)
if os.environ.get("NOSPIN") == "1":
    from tensorflow.python.eager import context as _ctx
    from tensorflow.core.protobuf import config_pb2
    _c = config_pb2.ConfigProto(); _c.experimental.disable_thread_spinning = True
    _ctx.context()._config = _c
L = keras.layers
m = keras.Sequential([keras.Input((32, 32, 3)), L.Conv2D(32, 3, padding="same", activation="relu"), L.Conv2D(32, 3, activation="relu"),
    L.MaxPooling2D(), L.Dropout(0.25), L.Conv2D(64, 3, padding="same", activation="relu"), L.Conv2D(64, 3, activation="relu"),
    L.MaxPooling2D(), L.Dropout(0.25), L.Flatten(), L.Dense(512, activation="relu"), L.Dropout(0.5), L.Dense(10, activation="softmax")])
m.compile(optimizer=keras.optimizers.RMSprop(1e-4), loss="categorical_crossentropy", metrics=["accuracy"])
x = np.random.default_rng(1).random((4096, 32, 32, 3), dtype="float32"); y = np.eye(10, dtype="float32")[np.random.default_rng(2).integers(0, 10, 4096)]
ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(4096).batch(32).repeat().prefetch(2)
PA = np.ones((160, 160), dtype="float32")
class T(keras.callbacks.Callback):
    def __init__(s): s.t = {}
    def on_train_batch_begin(s, b, logs=None):
        if b % 5 == 0:
            t = time.perf_counter(); z = 0
            for i in range(20000): z += i * i
            t1 = time.perf_counter(); PA @ PA; t2 = time.perf_counter()
            s.pr.append((t1 - t) * 1e3); s.pm.append((t2 - t1) * 1e3)
        s.t[b] = time.perf_counter()
    pr = []; pm = []
def threads():
    out = {}
    for t in os.listdir("/proc/self/task"):
        try:
            name = open(f"/proc/self/task/{t}/comm").read().strip()
            f = open(f"/proc/self/task/{t}/stat").read().rsplit(")", 1)[1].split()
            sched = open(f"/proc/self/task/{t}/schedstat").read().split()
        except OSError:
            continue
        out[t] = (name, (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK"), int(sched[0]) / 1e9, int(sched[1]) / 1e9)
    return out
cb = T(); s1 = steal(); c1 = time.process_time()
m.fit(ds, epochs=1, steps_per_epoch=31, verbose=0, callbacks=[cb])
th0 = threads()
m.fit(ds, epochs=1, steps_per_epoch=130, verbose=0, callbacks=[cb])
th1 = threads()
def smaps():
    out = {}
    for line in open("/proc/self/smaps_rollup"):
        k, _, v = line.partition(":")
        if k in ("Rss", "AnonHugePages", "Anonymous"):
            out[k] = int(v.split()[0]) // 1024
    return out
SM = smaps()
ms = (cb.t[129] - cb.t[30]) / 99 * 1000
import statistics as st
from tensorflow.python.eager import context as CTX
pr = round(st.median(cb.pr[-20:]), 3); pm = round(st.median(cb.pm[-20:]), 3)
by = {}
for t, (name, c, run, wait) in th1.items():
    c0 = th0.get(t, (name, 0, 0, 0))
    k = name + ':' + t if name.startswith('tf_C') else name
    r = by.setdefault(k, [0, 0, 0])
    r[0] += 1; r[1] += run - c0[2]; r[2] += wait - c0[3]
by = {k: [v[0], round(v[1], 2), round(v[2], 2)] for k, v in by.items() if v[1] > 0.05 or v[2] > 0.05}
s2 = steal(); p1 = probe(); q1 = scalar_probe()
print(json.dumps(dict(ms=round(ms, 1), probe0=round(p0, 1), probe1=round(p1, 1), scal0=round(q0, 2), scal1=round(q1, 2), steal_train=round(s2 - s1, 2), steal_all=round(s2 - s0, 2), threads=by, nospin=os.environ.get("ALLOC"), cfg=str(CTX.context().config.experimental.disable_thread_spinning), loop_ms=pr, smaps=SM, mm_ms=pm)), flush=True)
