#!/usr/bin/env bash
# Reader lever (issue 12): a reader adapter trained on ANSWER examples only, apart from the policy,
# with 4x the ANSWER examples of the shipped mixture, then read on the VALIDATION personas of seed $SEED (137 by default)
# by benchmarks/reader_calibration.py (the same questions and scoring rules as the shipped
# adapter's row in benchmarks/reader-levers.md). Never touches a test split.
#
#   [SEED=137] benchmarks/reader_only.sh RUN WORK [STEPS]
#
# RUN: a run tree with results/data/$SEED/train.jsonl (a finished default run, or only its
# generate job: the SFT split is rebuilt here, the same personas as the workflow's for that seed);
# WORK: a scratch directory. The recipe is the shipped one (lr 1e-3, r 16, all projections,
# one example per step, fp32, one thread) except the data and the step count (default 600).
set -euo pipefail
run=$1 work=$2 steps=${3:-600} seed=${SEED:-137}
model=${MODEL:-resources/models/smollm2-135m}
source "$(dirname "$0")/task_sft.sh"
task_sft "$run" "$work" "$seed" "$model" 2.0 answer
# A run-shaped tree for reader_calibration.py: the run's timelines, this SFT split, this adapter.
mkdir -p "$work/run/results/data" "$work/run/results/sft" "$work/run/results/train"
ln -sfn "$(realpath "$run/results/data/$seed")" "$work/run/results/data/$seed"
ln -sfn "$(realpath "$work/sft")" "$work/run/results/sft/$seed"
train_recipe "$work/sft" "$model" "$seed" "$steps" $((steps / 2)) "$work" "$work/run/results/train/$seed"
OMP_NUM_THREADS=1 python benchmarks/reader_calibration.py --run "$work/run" --seed "$seed" --model "$model" \
  --out "$work/calibration.json"
# The test suite's reference reader (tests/fixtures/instrument/reader, kept under 5 MiB): each
# module's update B @ A truncated to rank 8 by SVD (the same alpha/r scale), stored in bf16. On the
# instrument fixture it makes the same per-type accuracy as the rank-16 fp32 adapter (0.881).
python - "$work/run/results/train/$seed" "${FIXTURE:-$work/reader-r8}" <<'EOF2'
import json, os, sys
import torch
from safetensors.torch import load_file, save_file
src, dst, rank = sys.argv[1], sys.argv[2], 8
os.makedirs(dst, exist_ok=True)
weights = load_file(f"{src}/adapter_model.safetensors")
out = {}
for a_key in sorted(k for k in weights if "lora_A" in k):
    b_key = a_key.replace("lora_A", "lora_B")
    u, s, vh = torch.linalg.svd(weights[b_key].double() @ weights[a_key].double(), full_matrices=False)
    root = s[:rank].sqrt()
    out[b_key] = (u[:, :rank] * root).to(torch.bfloat16).contiguous()
    out[a_key] = (root[:, None] * vh[:rank]).to(torch.bfloat16).contiguous()
config = json.load(open(f"{src}/adapter_config.json"))
config["lora_alpha"], config["r"] = config["lora_alpha"] * rank // config["r"], rank
save_file(out, f"{dst}/adapter_model.safetensors", metadata={"format": "pt"})
json.dump(config, open(f"{dst}/adapter_config.json", "w"), indent=2, sort_keys=True)
EOF2
