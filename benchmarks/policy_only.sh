#!/usr/bin/env bash
# Policy lever (issue 13: "whether the policy and the reader share one adapter", the policy's half):
# a policy adapter trained on CONSOLIDATE examples only, with the shipped recipe and step count,
# scored by `clerk learning-curve` on the VALIDATION personas of seed $SEED (137 by default), the
# same 40 sessions and decoder as the shipped run's results/curve/learning_curve.csv. Never touches
# a test split. benchmarks/reader_only.sh is the reader's half.
#
#   [SEED=137] benchmarks/policy_only.sh RUN WORK [STEPS]
#
# RUN: a run tree with results/data/$SEED/train.jsonl (a finished default run, or only its
# generate job); WORK: a scratch directory. build-sft takes the workflow's arguments
# (config/config.yaml: answer ratio 0.5, the same views, evict weight 2), then the ANSWER examples
# are dropped; training is the shipped recipe (lr 1e-3, r 16, all projections, one example per
# step, fp32, one thread), 300 steps by default with snapshots every 100.
set -euo pipefail
run=$1 work=$2 steps=${3:-300} seed=${SEED:-137}
model=${MODEL:-resources/models/smollm2-135m}
source "$(dirname "$0")/task_sft.sh"
task_sft "$run" "$work" "$seed" "$model" 0.5 consolidate
train_recipe "$work/sft" "$model" "$seed" "$steps" $((steps / 3)) "$work" "$work/adapter"
OMP_NUM_THREADS=1 clerk learning-curve --timelines "$run/results/data/$seed/train.jsonl" --sft "$work/sft" \
  --model "$model" --adapter "$work/adapter" --sessions 40 --max-new-tokens 64 --batch-size 16 \
  --dtype float32 --threads 1 --out "$work/learning_curve.csv" > "$work/curve.log" 2>&1
cat "$work/learning_curve.csv"
