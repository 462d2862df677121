#!/bin/bash
# The decision's own numbers rehearsed with `compare --simulate`, scenario family by family (docs/compare.md,
# Rehearsal): what the answer states against what the scenario's truth says. Run from the repository root:
#   bash reports/rehearsal-baseline/run.sh [TRIALS]    (ONLY="identical x1.1": those two-candidate families alone)
set -u
trials=${1:-400}
out=${OUT_DIR:-reports/rehearsal-baseline}  # another folder: OUT_DIR=reports/NAME
cs=(.venv/bin/cpustudy compare mnist_mlp --target-accuracy 0.5 --data learnable --max-epochs 4 --seeds 3)
builds=(--candidates here:1 --builds "tf,tf-eigen" --convergence-at here:1)
wanted() { [ -z "${ONLY:-}" ] || [[ " $ONLY " == *" $1 "* ]]; }  # ONLY="identical x1.1": those alone
family() {  # name, tf-eigen's truth (JSON), extra top-level JSON, [more compare args]
  local name=$1 eigen=$2 extra=$3; shift 3
  wanted "$name" || return 0
  cat > "$out/$name.scenario.json" <<JSON
{"noise": 0.06, "period_shift": 0.15, $extra
 "candidates": {"here:1 tf": {"sample_s": 0.0002}, "here:1 tf-eigen": $eigen},
 "settings": {"": {"epochs": {"1": 0.6, "2": 0.4}}}}
JSON
  "${cs[@]}" "${builds[@]}" --simulate "$out/$name.scenario.json" --trials "$trials" --format json "$@" > "$out/$name.json"
  echo "$name: rc=$?"
}
family identical '{"sample_s": 0.0002}' ''
family x1.1 '{"sample_s": 0.00022}' ''
family x0.9 '{"sample_s": 0.00018}' ''  # the default (tf) the slower: what deciding can win
family x1.3 '{"sample_s": 0.00026}' ''
family x1.5 '{"sample_s": 0.0003}' ''
family one-period-x1.1 '{"sample_s": 0.00022}' '"period_shift": 0.0,'
family interaction-5pc '{"sample_s": 0.0002}' '"interaction": 0.05,'
family interaction-5pc-x1.1 '{"sample_s": 0.00022}' '"interaction": 0.05,'
family projected-10pc-off '{"sample_s": 0.0002, "projection_bias": 0.1}' ''
if [ -z "${BASELINE:-}" ]; then  # families the baseline's version could not play (a comparison resumed later)
  family resumed-shift0.15-x1.1 '{"sample_s": 0.00022}' '"earlier": ["here:1 tf"],'
  family resumed-shift0.25-x1.1 '{"sample_s": 0.00022}' '"period_shift": 0.25, "earlier": ["here:1 tf"],'
  family resumed-shift0.25-identical '{"sample_s": 0.0002}' '"period_shift": 0.25, "earlier": ["here:1 tf"],'
fi
cat > "$out/settings-2.scenario.json" <<JSON
{"noise": 0.06, "period_shift": 0.15,
 "candidates": {"here:1": {"sample_s": 0.0002}},
 "settings": {"fp32": {"epochs": {"1": 0.5, "2": 0.5}}, "bf16": {"epochs": {"1": 0.3, "2": 0.7}, "speed": 0.85}}}
JSON
wanted settings-2 && { "${cs[@]}" --candidates here:1 --convergence-at here:1 --precisions float32,mixed_bfloat16 \
  --simulate "$out/settings-2.scenario.json" --trials "$trials" --format json > "$out/settings-2.json"
  echo "settings-2: rc=$?"; }
cat > "$out/settings-4.scenario.json" <<JSON
{"noise": 0.06, "period_shift": 0.15,
 "candidates": {"here:1": {"sample_s": 0.0002}},
 "settings": {"fp32 b64": {"epochs": {"1": 0.5, "2": 0.5}}, "bf16 b64": {"epochs": {"1": 0.3, "2": 0.7}, "speed": 0.85},
              "fp32 b256": {"epochs": {"1": 0.3, "2": 0.7}, "speed": 0.8}, "bf16 b256": {"epochs": {"2": 1.0}, "speed": 0.7}}}
JSON
wanted settings-4 && { "${cs[@]}" --candidates here:1 --convergence-at here:1 --precisions float32,mixed_bfloat16 \
  --batch-sizes 64,256 --simulate "$out/settings-4.scenario.json" --trials "$trials" --format json > "$out/settings-4.json"
  echo "settings-4: rc=$?"; }
# four settings, each trial's world drawn about the scenario (each setting's chances of 1 or 2 epochs from a flat
# Dirichlet, speeds 10 % apart): P(lowest expected cost) scored over worlds, not in one
cat > "$out/settings-4-drawn.scenario.json" <<JSON
{"noise": 0.06, "period_shift": 0.15, "draw": {"speed": 0.1, "epochs": true},
 "candidates": {"here:1": {"sample_s": 0.0002}},
 "settings": {"fp32 b64": {"epochs": {"1": 0.5, "2": 0.5}}, "bf16 b64": {"epochs": {"1": 0.5, "2": 0.5}, "speed": 0.85},
              "fp32 b256": {"epochs": {"1": 0.5, "2": 0.5}, "speed": 0.8}, "bf16 b256": {"epochs": {"1": 0.5, "2": 0.5}, "speed": 0.7}}}
JSON
wanted settings-4-drawn && { "${cs[@]}" --candidates here:1 --convergence-at here:1 --precisions float32,mixed_bfloat16 \
  --batch-sizes 64,256 --trainings 100 --simulate "$out/settings-4-drawn.scenario.json" --trials "$trials" \
  --format json > "$out/settings-4-drawn.json"
  echo "settings-4-drawn: rc=$?"; }
if [ -z "${BASELINE:-}" ] && wanted settings-4-t100; then  # the same race serving 100 trainings (10: not worth starting, since the one model)
  cp "$out/settings-4.scenario.json" "$out/settings-4-t100.scenario.json"
  "${cs[@]}" --candidates here:1 --convergence-at here:1 --precisions float32,mixed_bfloat16 --batch-sizes 64,256 \
    --trainings 100 --simulate "$out/settings-4.scenario.json" --trials "$trials" --format json > "$out/settings-4-t100.json"
  echo "settings-4-t100: rc=$?"
fi
# one candidate, nothing to choose: its planned seeds give the interval; seeds needing 1 or 2 epochs make most of its
# spread (until 2be31d1/2853bf4 it spent the whole budget on more seeds, which measure that spread, not narrow it)
cat > "$out/one-candidate.scenario.json" <<JSON
{"noise": 0.06, "period_shift": 0.15, "candidates": {"here:1": {"sample_s": 0.0002}},
 "settings": {"": {"epochs": {"1": 0.6, "2": 0.4}}}}
JSON
wanted one-candidate && { "${cs[@]}" --candidates here:1 --convergence-at here:1 \
  --simulate "$out/one-candidate.scenario.json" --trials "$trials" --format json > "$out/one-candidate.json"
  echo "one-candidate: rc=$?"; }
