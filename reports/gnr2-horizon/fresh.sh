#!/bin/bash
# Twelve fresh trainings of compare's choice (here:2 bf16 b256) in a later period (an hour or more after the last run
# behind its statement), seeds no comparison trains, then this machine's backtest over every check in the database.
# Run from the repository root with nothing else running: bash reports/gnr2-horizon/fresh.sh [FIRST_SEED [OUTPUT]]
# (defaults 7401, fresh.txt)
set -u
out=reports/gnr2-horizon
first=${1:-7401}
{
  date -u +"%F %T UTC: fresh trainings"
  for s in $(seq "$first" $((first + 11))); do
    python -m cpustudy run reports/gnr2-decision/my_fashion_convnet.py --vcpus 2 --precision mixed_bfloat16 \
      --batch-size 256 --target-accuracy 0.85 --max-epochs 6 --seed "$s" --db "$out/horizon.sqlite" 2>&1 | tail -n 3
  done
  date -u +"%F %T UTC: backtest"
  python -m cpustudy backtest --db "$out/horizon.sqlite" 2>&1
  date -u +"%F %T UTC: done"
} > "$out/${2:-fresh.txt}"
