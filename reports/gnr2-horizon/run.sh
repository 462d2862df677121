#!/bin/bash
# Issue "One model of what is known", real: four near-equal settings of a small convnet (the user's own model file)
# on real Fashion-MNIST, decided over 10 trainings, then over 100, into one database. Run from the repository root
# with nothing else running: bash reports/gnr2-horizon/run.sh
set -u
out=reports/gnr2-horizon
cs=(python -m cpustudy compare reports/gnr2-decision/my_fashion_convnet.py --target-accuracy 0.85 --candidates here:2
    --precisions "float32,mixed_bfloat16" --batch-sizes "64,256" --seeds 3 --db "$out/horizon.sqlite")
for n in 10 100; do
  {
    date -u +"%F %T UTC: compare --trainings $n"
    { "${cs[@]}" --trainings "$n" --out "$out/trainings-$n" --format json > "$out/trainings-$n.json"; } 2>&1
    echo "exit $?"
    date -u +"%F %T UTC: done"
  } > "$out/trainings-$n.txt"
done
