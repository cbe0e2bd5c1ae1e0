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
mkdir -p "$work"
clerk build-sft --timelines "$run/results/data/$seed/train.jsonl" --tokenizer "$model" --seed "$seed" \
  --answer-ratio 0.5 --answer-views ledger=3,full=1,window=1,rag=1,add-only=1 --evict-weight 2 \
  --window-k 2 --rag-k 6 --val-fraction 0.1 --out "$work/sft_mix" > "$work/build.log" 2>&1
python - "$work" <<'PY'
import shutil, sys
from datasets import DatasetDict, load_from_disk
work = sys.argv[1]
mix = load_from_disk(f"{work}/sft_mix")
DatasetDict({k: v.filter(lambda r: r["task"] == "consolidate") for k, v in mix.items()}).save_to_disk(f"{work}/sft")
shutil.copy(f"{work}/sft_mix/sft_stats.json", f"{work}/sft/sft_stats.json")  # the same persona split
PY
OMP_NUM_THREADS=1 clerk train --sft "$work/sft" --model "$model" --seed "$seed" --lr 1e-3 --max-steps "$steps" \
  --batch-size 1 --grad-accum 1 --max-length 1024 --lora-r 16 --lora-alpha 32 --lora-dropout 0 --bf16 off \
  --save-steps 50 --threads 1 --snapshot-steps $((steps / 3)) --checkpoint-dir "$work/ckpt" \
  --out "$work/adapter" > "$work/train.log" 2>&1
OMP_NUM_THREADS=1 clerk learning-curve --timelines "$run/results/data/$seed/train.jsonl" --sft "$work/sft" \
  --model "$model" --adapter "$work/adapter" --sessions 40 --max-new-tokens 64 --batch-size 16 \
  --dtype float32 --threads 1 --out "$work/learning_curve.csv" > "$work/curve.log" 2>&1
cat "$work/learning_curve.csv"
