#!/usr/bin/env bash
# Six fresh trainings of the candidate not chosen (here:1), same seeds, to hold the decision's regret against them.
set -euo pipefail
cd "$(dirname "$0")"
for s in 7301 7302 7303 7304 7305 7306; do
  cpustudy run mnist_mlp --vcpus 1 --data learnable --target-accuracy 0.9 --max-epochs 3 --seed "$s" --db later-check.sqlite
done
cpustudy backtest --db later-check.sqlite
