#!/bin/bash
# A fourth, short call: cifar10_cnn's host augmentation on the GPU with fewer pinned cores (the pipeline takes all but
# one), to see whether the 16-core pipeline's slow mode comes from oversubscribing the host.
set -u
t0=$(date +%s)
el() { echo $(( $(date +%s) - t0 )); }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 CPUSTUDY_CACHE=/tmp/cscache
DB=$OUT/h200d.sqlite
cs() { local limit=$1; shift; timeout "$limit" python3 -m cpustudy "$@" 2>&1 | grep -E "^run |epoch [23]/"; echo "== rc=$? at $(el) s: cpustudy $*"; }
for spec in "8 host 7" "8 none 7" "8 host 8" "12 host 9"; do
  read -r vcpus aug seed <<< "$spec"
  [ $(( $(el) + 45 )) -gt 175 ] && break
  cs 60 run cifar10_cnn --device gpu --build jax-here --vcpus "$vcpus" --augment "$aug" --epochs 3 --seed "$seed" --db "$DB"
done
echo "done at $(el) s"
