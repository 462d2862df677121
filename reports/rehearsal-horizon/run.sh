#!/bin/bash
# The issue's 10-training horizon: per family, the decision loop against the fixed plan (--max-trainings 0: every
# setting's every seed and the planned probes) and against taking the default unmeasured. Run from the repository
# root: bash reports/rehearsal-horizon/run.sh [TRIALS]; then python3 reports/rehearsal-horizon/table.py
set -u
trials=${1:-200}
out=reports/rehearsal-horizon
cs=(.venv/bin/cpustudy compare mnist_mlp --target-accuracy 0.5 --data learnable --max-epochs 4 --seeds 3)
two=(--candidates here:1 --builds "tf,tf-eigen" --convergence-at here:1)
two_candidates() {  # name, tf-eigen's truth (JSON)
  cat > "$out/$1.scenario.json" <<JSON
{"noise": 0.06, "period_shift": 0.15,
 "candidates": {"here:1 tf": {"sample_s": 0.0002}, "here:1 tf-eigen": $2},
 "settings": {"": {"epochs": {"1": 0.6, "2": 0.4}}}}
JSON
}
two_candidates identical '{"sample_s": 0.0002}'
two_candidates x1.1 '{"sample_s": 0.00022}'
two_candidates x0.9 '{"sample_s": 0.00018}'
two_candidates x0.7 '{"sample_s": 0.00014}'
cp reports/rehearsal-model/settings-2.scenario.json reports/rehearsal-model/settings-4.scenario.json "$out/"
for name in identical x1.1 x0.9 x0.7; do
  for plan in decision fixed; do
    extra=(); [ "$plan" = fixed ] && extra=(--max-trainings 0)
    "${cs[@]}" "${two[@]}" "${extra[@]}" --simulate "$out/$name.scenario.json" --trials "$trials" --format json \
      > "$out/$name.$plan.json"; echo "$name $plan: rc=$?"
  done
done
for plan in decision fixed; do
  extra=(); [ "$plan" = fixed ] && extra=(--max-trainings 0)
  "${cs[@]}" --candidates here:1 --convergence-at here:1 --precisions float32,mixed_bfloat16 "${extra[@]}" \
    --simulate "$out/settings-2.scenario.json" --trials "$trials" --format json > "$out/settings-2.$plan.json"
  echo "settings-2 $plan: rc=$?"
  "${cs[@]}" --candidates here:1 --convergence-at here:1 --precisions float32,mixed_bfloat16 --batch-sizes 64,256 \
    "${extra[@]}" --simulate "$out/settings-4.scenario.json" --trials "$trials" --format json > "$out/settings-4.$plan.json"
  echo "settings-4 $plan: rc=$?"
done
