#!/bin/bash
# The third call on a lent H200 machine (a later session, cpustudy at 66dc7d3): a GPU candidate in `compare` with
# the current decision code, the 16 host cores' figures with Keras on JAX and --calibrate (TensorFlow cannot travel),
# and more interleaved pairs of cifar10_cnn's host augmentation against none on the GPU, as time allows.
set -u
t0=$(date +%s)
el() { echo $(( $(date +%s) - t0 )); }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 CPUSTUDY_CACHE=/tmp/cscache
DB=$OUT/h200c.sqlite
cs() { local limit=$1; shift; timeout "$limit" python3 -m cpustudy "$@"; echo "== rc=$? at $(el) s: cpustudy $*"; }
{ cs 60 machine; nvidia-smi -L; nproc; } > "$OUT/machine.txt" 2>&1
# 1. compare with this machine's GPU as a candidate beside 4 and 16 of its vCPUs (current decision code)
cs 200 compare mnist_mlp --data learnable --target-accuracy 0.9 --max-epochs 3 --candidates here:4,here:16,here:gpu \
  --builds jax-here --seeds 2 --max-trainings 6 --db "$DB" --format json > "$OUT/compare.json" 2> "$OUT/compare.log"
tail -25 "$OUT/compare.log"
# 2. the 16-core CPU figures: 8 and 16 vCPUs, Keras on JAX, capped epochs projected, --calibrate (full epochs beside)
left=$(( 330 - $(el) )); [ $left -gt 60 ] && cs $left sweep --vcpus 8,16 --builds jax-here --workloads mnist_mlp,mnist_cnn \
  --steps-per-epoch 100 --epochs 2 --repeats 2 --calibrate --db "$DB"
# 3. cifar10_cnn on the GPU at 16 vCPUs, host augmentation (15 pipeline threads) against none, interleaved pairs
for r in 5 6 7; do
  [ $(( $(el) + 85 )) -gt 520 ] && break
  for aug in none host; do
    cs 75 run cifar10_cnn --device gpu --build jax-here --vcpus 16 --augment "$aug" --epochs 3 --seed "$r" --db "$DB"
  done
done
cs 60 results --db "$DB" > "$OUT/results.txt" 2>&1
echo "done at $(el) s"
