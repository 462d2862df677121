#!/bin/bash
# One candidate under the 20 % shift assumed between periods (stats.UNMEASURED_SHIFT since fcee169): the time to
# 0.858 of the small convnet (the user's own model file) on real Fashion-MNIST at here:2, batch 256, three seeds,
# into a new database (no backtest behind it: the interval rests on the prior). With nothing else running, from a
# worktree of the commit under test: bash reports/gnr2-shift20/run.sh WORKTREE
set -u
out=$(cd "$(dirname "$0")" && pwd)
cd "$1" || exit 2
{
  date -u +"%F %T UTC: compare ($(git rev-parse --short HEAD))"
  PYTHONPATH="$1" /work/main/.venv/bin/python -m cpustudy compare reports/gnr2-decision/my_fashion_convnet.py \
    --target-accuracy 0.858 --batch-size 256 --candidates here:2 --seeds 3 --max-epochs 4 --db "$out/shift20.sqlite"
  echo "exit $?"
  date -u +"%F %T UTC: done"
} > "$out/compare.txt" 2>&1
