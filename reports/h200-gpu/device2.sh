#!/bin/bash
# The second call on the lent H200 machine: cifar10_cnn's host augmentation against none again at 16 vCPUs
# (the pipeline then has 15 threads), and at 3 vCPUs (2 threads, the study's pipeline), interleaved.
set -u
t0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 CPUSTUDY_CACHE=/tmp/cscache
DB=$OUT/h200b.sqlite
cs() { local limit=$1; shift; timeout "$limit" python3 -m cpustudy "$@"; echo "== rc=$? at $(( $(date +%s) - t0 )) s: cpustudy $*"; }
for r in 3 4; do
  for v in 16 3; do
    for aug in none host; do
      cs 80 run cifar10_cnn --device gpu --build jax-here --vcpus "$v" --augment "$aug" --epochs 3 --seed "$r" --db "$DB"
    done
  done
done
echo "done at $(( $(date +%s) - t0 )) s"
