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
mkdir -p "$work"
clerk build-sft --timelines "$run/results/data/$seed/train.jsonl" --tokenizer "$model" --seed "$seed" \
  --answer-ratio 2.0 --answer-views ledger=3,full=1,window=1,rag=1,add-only=1 --evict-weight 2 \
  --window-k 2 --rag-k 6 --val-fraction 0.1 --out "$work/sft_mix" > "$work/build.log" 2>&1
python - "$work" <<'EOF'
import shutil, sys
from datasets import DatasetDict, load_from_disk
work = sys.argv[1]
mix = load_from_disk(f"{work}/sft_mix")
DatasetDict({k: v.filter(lambda r: r["task"] == "answer") for k, v in mix.items()}).save_to_disk(f"{work}/sft")
shutil.copy(f"{work}/sft_mix/sft_stats.json", f"{work}/sft/sft_stats.json")  # the same persona split
EOF
# A run-shaped tree for reader_calibration.py: the run's timelines, this SFT split, this adapter.
mkdir -p "$work/run/results/data" "$work/run/results/sft" "$work/run/results/train"
ln -sfn "$(realpath "$run/results/data/$seed")" "$work/run/results/data/$seed"
ln -sfn "$(realpath "$work/sft")" "$work/run/results/sft/$seed"
OMP_NUM_THREADS=1 clerk train --sft "$work/sft" --model "$model" --seed "$seed" --lr 1e-3 --max-steps "$steps" \
  --batch-size 1 --grad-accum 1 --max-length 1024 --lora-r 16 --lora-alpha 32 --lora-dropout 0 --bf16 off \
  --save-steps 50 --threads 1 --snapshot-steps $((steps / 2)) --checkpoint-dir "$work/ckpt" \
  --out "$work/run/results/train/$seed" > "$work/train.log" 2>&1
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
