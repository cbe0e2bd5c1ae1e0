# Shared by benchmarks/reader_only.sh and benchmarks/policy_only.sh (sourced, not run).
#
# task_sft RUN WORK SEED MODEL ANSWER_RATIO TASK: the SFT set of one seed built with the workflow's
# arguments (config/config.yaml's views and evict weight; ANSWER_RATIO ANSWER examples per
# CONSOLIDATE example) into WORK/sft_mix, then only the rows of TASK ("answer" or "consolidate")
# into WORK/sft, with the mixture's sft_stats.json (the same persona split).
task_sft() {
  local run=$1 work=$2 seed=$3 model=$4 ratio=$5 task=$6
  mkdir -p "$work"
  clerk build-sft --timelines "$run/results/data/$seed/train.jsonl" --tokenizer "$model" --seed "$seed" \
    --answer-ratio "$ratio" --answer-views ledger=3,full=1,window=1,rag=1,add-only=1 --evict-weight 2 \
    --window-k 2 --rag-k 6 --val-fraction 0.1 --out "$work/sft_mix" > "$work/build.log" 2>&1
  python - "$work" "$task" <<'PY'
import shutil, sys
from datasets import DatasetDict, load_from_disk
work, task = sys.argv[1], sys.argv[2]
mix = load_from_disk(f"{work}/sft_mix")
DatasetDict({k: v.filter(lambda r: r["task"] == task) for k, v in mix.items()}).save_to_disk(f"{work}/sft")
shutil.copy(f"{work}/sft_mix/sft_stats.json", f"{work}/sft/sft_stats.json")
PY
}

# train_recipe SFT MODEL SEED STEPS SNAPSHOT_STEPS WORK OUT: the shipped training recipe (lr 1e-3,
# r 16, all projections, one example per step, fp32, one thread; no validation loss, as the workflow's
# train.validation_loss: false), log in WORK/train.log.
train_recipe() {
  OMP_NUM_THREADS=1 clerk train --sft "$1" --model "$2" --seed "$3" --lr 1e-3 --max-steps "$4" \
    --batch-size 1 --grad-accum 1 --max-length 1024 --lora-r 16 --lora-alpha 32 --lora-dropout 0 --bf16 off \
    --save-steps 50 --threads 1 --no-eval --snapshot-steps "$5" --checkpoint-dir "$6/ckpt" --out "$7" > "$6/train.log" 2>&1
}
