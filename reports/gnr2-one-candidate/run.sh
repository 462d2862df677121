#!/bin/bash
# One candidate (nothing to choose): the time to 0.858 of a small convnet (the user's own model file) on real
# Fashion-MNIST at 2 vCPUs, batch 256, three seeds, measured by the code before the one-candidate settle rule (OLD, a
# worktree of aeb9676) and by this code (NEW, a worktree of the commit under test), each into its own database.
# Usage, with nothing else running: bash reports/gnr2-one-candidate/run.sh OLD_WORKTREE NEW_WORKTREE
set -u
out=$(cd "$(dirname "$0")" && pwd)
args=(compare reports/gnr2-decision/my_fashion_convnet.py --target-accuracy 0.858 --batch-size 256 --candidates here:2
      --seeds 3 --max-epochs 4 --format json)
for which in new old; do
  wt=$1; [ "$which" = new ] && wt=$2
  {
    date -u +"%F %T UTC: $which ($(git -C "$wt" rev-parse --short HEAD))"
    (cd "$wt" && PYTHONPATH="$wt" /work/main/.venv/bin/python -m cpustudy "${args[@]}" --db "$out/$which.sqlite" \
      > "$out/$which.json")
    echo "exit $?"
    date -u +"%F %T UTC: done"
  } > "$out/$which.txt" 2>&1
done
