#!/bin/bash
# Twelve fresh trainings of the one candidate an hour or more after the statement (seeds no comparison trains),
# then the backtest. With nothing else running: bash reports/gnr2-shift20/fresh.sh WORKTREE
set -u
out=$(cd "$(dirname "$0")" && pwd)
cd "$1" || exit 2
{
  date -u +"%F %T UTC: fresh trainings"
  for s in $(seq 8501 8512); do
    PYTHONPATH="$1" /work/main/.venv/bin/python -m cpustudy run reports/gnr2-decision/my_fashion_convnet.py --vcpus 2 \
      --batch-size 256 --target-accuracy 0.858 --max-epochs 4 --seed "$s" --db "$out/shift20.sqlite" 2>&1 | tail -n 3
  done
  date -u +"%F %T UTC: backtest"
  PYTHONPATH="$1" /work/main/.venv/bin/python -m cpustudy backtest --db "$out/shift20.sqlite" 2>&1
  date -u +"%F %T UTC: done"
} > "$out/fresh.txt"
