#!/usr/bin/env bash
# Phrasing-diversity lever (issues 12 and 13: the out-of-distribution gap), on VALIDATION only.
#
#   benchmarks/phrasing_diversity.sh WORK CONDITION        CONDITION: base | diverse
#   benchmarks/phrasing_diversity.sh WORK score            after both conditions have trained
# WORK/cat holds diverse.yaml and heldout.yaml from benchmarks/phrasing_split.py --out WORK/cat.
#
# Seed 137 (SEED, below). `base` trains the shipped recipe (600 steps; policy on CONSOLIDATE examples, reader on
# ANSWER examples, benchmarks/policy_only.sh and reader_only.sh) on timelines phrased by the
# shipped catalogue; `diverse` trains the same recipe on timelines phrased by the catalogue plus
# the new templates' training share (WORK/cat/diverse.yaml, benchmarks/phrasing_split.py). Both
# are then scored on two sets of validation personas (held out of training; no test split read):
#   in   — the shipped catalogue's validation personas (what benchmarks/policy-levers.md measures:
#          policy on its 40 sessions, reader on the gold ledger; the base adapters' figures there
#          are the same recipe's, so only `diverse` is scored on them);
#   held — validation personas phrased ONLY by the held-out new templates (WORK/cat/heldout.yaml),
#          which no adapter saw: the stand-in for test_ood (policy on all 80 sessions; reader on
#          the gold ledger and the full transcript).
# Policy: clerk learning-curve (final adapter, with and without the grammar). Reader:
# benchmarks/reader_calibration.py. benchmarks/phrasing_table.py WORK/score prints the tables.
# `score-base` scores the base adapters on `held` while `diverse` trains. `closed` scores both
# policies as the shipped `clerk` row is scored, closed loop (benchmarks/evict_victim.py --victim
# policy: each session written against the system's own ledger, exact rule reader), on `held` and
# `in` (all 80 sessions of the 10 validation personas), two runs side by side.
#
# Environment (defaults: the 600-step study of seed 137 above):
#   SEED=S STEPS=N   another seed, another step count (both adapters)
#   POLICY_ONLY=1    train and score the policy only (no reader)
#   BASE_POLICY=DIR  an adapter already trained with the shipped recipe (a default run's
#                    results/train/SEED) as `base`, instead of training one; then `base` is also
#                    scored on `in`, since the committed in-distribution figures are 600-step ones.
#   READER_ONLY=1    train and score the reader only (no policy); with BASE_READER=DIR (a default
#                    run's results/train_reader/SEED, or another reader) as `base`, scored on `in`
#                    and `held` beside `diverse`.
set -euo pipefail
work=$1 what=$2 seed=${SEED:-137} steps=${STEPS:-600} policy_only=${POLICY_ONLY:-0} base_policy=${BASE_POLICY:-}
reader_only=${READER_ONLY:-0} base_reader=${BASE_READER:-}
model=${MODEL:-resources/models/smollm2-135m}
bench=$(dirname "$0")
gen() {  # gen OUT [--phrasings FILE]: the default profile's train split of seed 137
  local out=$1; shift
  mkdir -p "$out/results/data/$seed"
  [ -f "$out/results/data/$seed/train.jsonl" ] || clerk generate --seed $seed --split train --personas 100 --sessions 8 \
    --questions 3-3 --budget 12 --init-facts 4 "$@" --out "$out/results/data/$seed/train.jsonl" > /dev/null
}
case $what in
  base|diverse)
    if [ "$what" = base ]; then gen "$work/data-base"; else gen "$work/data-diverse" --phrasings "$work/cat/diverse.yaml"; fi
    source "$bench/task_sft.sh"
    # The recipes of benchmarks/policy_only.sh and reader_only.sh (STEPS steps, no snapshots), side by side.
    if [ "$reader_only" != 1 ]; then
      ( task_sft "$work/data-$what" "$work/$what-policy" $seed "$model" 0.5 consolidate
        if [ "$what" = base ] && [ -n "$base_policy" ]; then ln -sfn "$(realpath "$base_policy")" "$work/base-policy/adapter"
        else train_recipe "$work/$what-policy/sft" "$model" $seed $steps 0 "$work/$what-policy" "$work/$what-policy/adapter"; fi ) &
    fi
    if [ "$policy_only" != 1 ]; then
      task_sft "$work/data-$what" "$work/$what-reader" $seed "$model" 2.0 answer
      if [ "$what" = base ] && [ -n "$base_reader" ]; then ln -sfn "$(realpath "$base_reader")" "$work/base-reader/adapter"
      else train_recipe "$work/$what-reader/sft" "$model" $seed $steps 0 "$work/$what-reader" "$work/$what-reader/adapter"; fi
    fi
    wait
    ;;
  score|score-base)
    # score-base: only the base adapters on the held-out phrasings (while `diverse` trains).
    gen "$work/data-held" --phrasings "$work/cat/heldout.yaml"
    source "$bench/task_sft.sh"
    [ -d "$work/held-sft/sft" ] || task_sft "$work/data-held" "$work/held-sft" $seed "$model" 2.0 answer
    mkdir -p "$work/score"
    # An item whose log exists was started already (by an earlier call, or by hand): not started again.
    # The base adapters on `in` are the shipped recipe's seed-137 numbers of benchmarks/policy-levers.md
    # and reader-levers.md (the base policy's run saw the same 134,527 tokens): not scored again.
    if [ "$what" = score-base ]; then items="base:held"; else items="base:held diverse:held diverse:in"; fi
    if { [ -n "$base_policy" ] || [ -n "$base_reader" ]; } && [ "$what" = score ]; then items="$items base:in"; fi
    for item in $items; do
      cond=${item%:*} set=${item#*:}
      if [ $set = in ] && [ "$reader_only" = 1 ]; then data=$work/data-base; sft=$work/base-reader/sft; views=oracle
      elif [ $set = in ]; then data=$work/data-base; sft=$work/base-policy/sft; n=40; views=oracle
      else data=$work/data-held; sft=$work/held-sft/sft; n=0; views="oracle full"; fi
      # Policy: the final adapter (trained without snapshots), with and without the grammar; 40
      # sessions on `in` (as benchmarks/policy-levers.md), all 80 of the 10 personas on `held`.
      [ "$reader_only" = 1 ] || [ -f "$work/score/policy-$cond-$set.log" ] || OMP_NUM_THREADS=1 clerk learning-curve \
        --timelines "$data/results/data/$seed/train.jsonl" --sft "$sft" --model "$model" --adapter "$work/$cond-policy/adapter" \
        --sessions $n --max-new-tokens 64 --batch-size 16 --dtype float32 --threads 1 \
        --out "$work/score/policy-$cond-$set.csv" > "$work/score/policy-$cond-$set.log" 2>&1 &
      [ "$policy_only" = 1 ] && continue
      # Reader: a run-shaped tree (timelines, the split's SFT stats, the reader adapter); the gold ledger
      # only on `in` (the full transcript there is benchmarks/reader-levers.md's).
      tree=$work/score/tree-$cond-$set
      mkdir -p "$tree/results/data" "$tree/results/sft" "$tree/results/train"
      ln -sfn "$(realpath "$data/results/data/$seed")" "$tree/results/data/$seed"
      ln -sfn "$(realpath "$sft")" "$tree/results/sft/$seed"
      ln -sfn "$(realpath "$work/$cond-reader/adapter")" "$tree/results/train/$seed"
      [ -f "$work/score/reader-$cond-$set.log" ] || OMP_NUM_THREADS=1 python "$bench/reader_calibration.py" \
        --run "$tree" --seed $seed --model "$model" --systems $views --out "$work/score/reader-$cond-$set.json" \
        > "$work/score/reader-$cond-$set.log" 2>&1 &
    done
    wait
    ;;
  closed)
    gen "$work/data-held" --phrasings "$work/cat/heldout.yaml"
    source "$bench/task_sft.sh"
    [ -d "$work/held-sft/sft" ] || task_sft "$work/data-held" "$work/held-sft" $seed "$model" 2.0 answer
    mkdir -p "$work/score"
    lane() {  # lane COND: that policy on `held`, then on `in`; a run whose summary exists is not repeated
      for set in held in; do
        if [ $set = in ]; then data=$work/data-base sft=$work/base-policy/sft; else data=$work/data-held sft=$work/held-sft/sft; fi
        out=$work/score/closed-$1-$set
        [ -s "$out.json" ] && continue
        OMP_NUM_THREADS=1 python "$bench/evict_victim.py" --timelines "$data/results/data/$seed/train.jsonl" --sft "$sft" \
          --model "$model" --adapter "$work/$1-policy/adapter" --out "$out" --victim policy > "$out.log" 2>&1
        tail -n 1 "$out.log" > "$out.json"
      done
    }
    lane base & lane diverse & wait
    ;;
  *) echo "CONDITION must be base, diverse, score, score-base or closed, got $what" >&2; exit 2 ;;
esac
