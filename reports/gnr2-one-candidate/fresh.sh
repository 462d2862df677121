#!/bin/bash
# Twelve fresh trainings of the one candidate in a later period (an hour or more after the last run behind NEW's
# statement), seeds no comparison trains, then the backtest of that database. With nothing else running:
# bash reports/gnr2-one-candidate/fresh.sh NEW_WORKTREE [FIRST_SEED [OUTPUT]]   (defaults 8401, fresh.txt)
set -u
out=$(cd "$(dirname "$0")" && pwd)
first=${2:-8401}
cd "$1" || exit 2
{
  date -u +"%F %T UTC: fresh trainings"
  for s in $(seq "$first" $((first + 11))); do
    PYTHONPATH="$1" /work/main/.venv/bin/python -m cpustudy run reports/gnr2-decision/my_fashion_convnet.py --vcpus 2 \
      --batch-size 256 --target-accuracy 0.858 --max-epochs 4 --seed "$s" --db "$out/new.sqlite" 2>&1 | tail -n 3
  done
  date -u +"%F %T UTC: backtest"
  PYTHONPATH="$1" /work/main/.venv/bin/python -m cpustudy backtest --db "$out/new.sqlite" 2>&1
  date -u +"%F %T UTC: done"
} > "$out/${3:-fresh.txt}"
