#!/usr/bin/env bash
# Six fresh trainings of one candidate at VCPUS vCPUs (2: the choice, here:2; 1: the other, here:1), seeds 7301-7306,
# in a later period than every run behind the statement, then the backtest: `fresh.sh 2`, then `fresh.sh 1`.
set -euo pipefail
vcpus="${1:?usage: fresh.sh VCPUS (2 for here:2, 1 for here:1)}"
cd "$(dirname "$0")"
for s in 7301 7302 7303 7304 7305 7306; do
  cpustudy run mnist_mlp --vcpus "$vcpus" --data learnable --target-accuracy 0.9 --max-epochs 3 --seed "$s" --db later-check.sqlite
done
cpustudy backtest --db later-check.sqlite
