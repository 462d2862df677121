#!/usr/bin/env bash
# Twelve fresh trainings of the compared model 30 minutes after the comparisons, seeds neither used, each its own session.
set -u
# As it ran (from /tmp/later2, beside the databases and logs kept here, a.sqlite kept as gnr2-later-a.sqlite;
# /tmp/wt-m: a worktree of 01b7e32).
cd "$(dirname "$0")" || exit
for v in 1 2; do
  for i in 1 2 3 4 5 6; do
    seed=$((8000 + 10 * v + i))
    PYTHONPATH=/tmp/wt-m /work/main/.venv/bin/python -m cpustudy run examples/fashion_mnist_cnn.py \
      --vcpus $v --max-epochs 6 --target-accuracy 0.86 --seed $seed --data real \
      --db a.sqlite >> fresh.out 2>> fresh.err
    echo "seed $seed vcpus $v rc=$? $(date -u +%H:%M:%S)" >> fresh.log
  done
done
echo "done" >> fresh.log
