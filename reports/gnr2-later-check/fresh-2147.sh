#!/bin/sh
# Six fresh trainings of the choice, here:1, in a later period (an hour after the last run behind the 20:45
# statement), then the backtest that holds them against it. Run from a git worktree at 4f7fcbd.
for S in 7301 7302 7303 7304 7305 7306; do
  cpustudy run mnist_mlp --vcpus 1 --data learnable --target-accuracy 0.9 --max-epochs 3 --seed "$S" \
    --db later-check.sqlite
done
cpustudy backtest --db later-check.sqlite > backtest-2148.txt
