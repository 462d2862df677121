#!/bin/bash
# What ran on the lent GPU machine (one NVIDIA H200, 16 host cores), from the repository root, with Keras and
# its two missing needs carried as wheels in .whl/ (the machine has JAX, no TensorFlow, no package index).
# Results come back in $OUT; `cpustudy merge` brings the database into a local one.
set -u
t0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 CPUSTUDY_CACHE=/tmp/cscache
DB=$OUT/h200.sqlite
cs() { local limit=$1; shift; timeout "$limit" python3 -m cpustudy "$@"; echo "== rc=$? at $(( $(date +%s) - t0 )) s: cpustudy $*"; }
{ cs 60 machine; nvidia-smi -L; nproc; } > "$OUT/machine.txt" 2>&1
# 1. cifar10_cnn on the GPU, full epochs: augmentation on the host (its pipeline over all cores but one)
#    against none, interleaved, two repeats each.
for r in 1 2; do
  for aug in none host; do
    cs 100 run cifar10_cnn --device gpu --build jax-here --augment "$aug" --epochs 3 --seed "$r" --db "$DB"
  done
done
# 2. compare with this machine's GPU as a candidate, measured for real beside 4 and 16 of its vCPUs.
cs 300 compare mnist_mlp --data learnable --target-accuracy 0.9 --max-epochs 3 --candidates here:4,here:16,here:gpu \
  --builds jax-here --seeds 2 --max-trainings 6 --db "$DB" --format json > "$OUT/compare.json" 2> "$OUT/compare.log"
cs 60 results --db "$DB" > "$OUT/results.txt" 2>&1
echo "done at $(( $(date +%s) - t0 )) s"
