#!/usr/bin/env bash
# The probe matrix of benchmarks/rerun-sources.md (issue 14): one fresh process per setting.
#   bash benchmarks/rerun_matrix.sh real OUTDIR    # SmolLM2-135M: read + write, then train (~25 CPU-min)
#   bash benchmarks/rerun_matrix.sh real OUTDIR r08 t08   # only the probes whose names start so
#   bash benchmarks/rerun_matrix.sh scratch OUTDIR # the smoke profile's scratch model (~3 CPU-min)
# Then: python benchmarks/rerun_probe.py compare OUTDIR/<first>.json OUTDIR/*.json
# Inputs: resources/models/smollm2-135m and results/data/137/test.jsonl (the default profile),
# SFT_DIR (default: results/sft/137) for training; SCRATCH and SMOKE_* for the scratch set.
set -euo pipefail
kind=$1 out=$2
mkdir -p "$out"
P="python benchmarks/rerun_probe.py run"
PIN="ATEN_CPU_CAPABILITY=avx2 MKL_CBWR=AUTO"            # CLERK_NUMERICS=pinned (the default)
STRICT="ATEN_CPU_CAPABILITY=avx2 MKL_CBWR=COMPATIBLE"   # CLERK_NUMERICS=strict
only=("${@:3}")
probe() {  # probe NAME "ENV=.. ENV=.." ARGS...
  local name=$1 envs=$2; shift 2
  if [ ${#only[@]} -gt 0 ]; then
    local hit=0; for o in "${only[@]}"; do [[ $name == "$o"* ]] && hit=1; done
    [ $hit = 1 ] || return 0
  fi
  env $envs $P "$@" --label "$name" --out "$out/$name.json" 2>"$out/$name.log" | tail -1
}
if [ "$kind" = real ]; then
  R="--model resources/models/smollm2-135m --timelines results/data/137/test.jsonl --stages read,write"
  R="$R --questions 12 --writes 4 --max-new-tokens 48"
  probe r00-unset X=1 $R
  probe r01-unset-again X=1 $R
  probe r02-aten-default ATEN_CPU_CAPABILITY=default $R
  probe r03-cbwr-auto MKL_CBWR=AUTO $R
  probe r04-cbwr-compatible MKL_CBWR=COMPATIBLE $R
  probe r05-strict-onednn-det "$STRICT ONEDNN_MAX_CPU_ISA=AVX2" $R --deterministic
  probe r06-strict-onednn-det-again "$STRICT ONEDNN_MAX_CPU_ISA=AVX2" $R --deterministic
  probe r07-bf16 X=1 $R --dtype bfloat16
  probe r08-pinned "$PIN" $R
  probe r09-pinned-again "$PIN" $R
  T="--model resources/models/smollm2-135m --timelines results/data/137/test.jsonl --stages train"
  T="$T --train-sft ${SFT_DIR:-results/sft/137} --train-steps 3"
  probe t00-unset X=1 $T
  probe t01-aten-default ATEN_CPU_CAPABILITY=default $T
  probe t02-cbwr-compatible MKL_CBWR=COMPATIBLE $T
  probe t03-strict-onednn-det "$STRICT ONEDNN_MAX_CPU_ISA=AVX2" $T --deterministic
  probe t04-strict-onednn-det-again "$STRICT ONEDNN_MAX_CPU_ISA=AVX2" $T --deterministic
  probe t05-strict-det "$STRICT" $T --deterministic
  probe t06-strict-onednn "$STRICT ONEDNN_MAX_CPU_ISA=AVX2" $T
  probe t07-deterministic X=1 $T --deterministic
  probe t08-pinned "$PIN" $T
  probe t09-pinned-again "$PIN" $T
else
  S="--model ${SCRATCH:?} --timelines ${SMOKE_TEST:?} --stages read,write,train --train-sft ${SMOKE_SFT:?}"
  S="$S --train-steps 16 --modules-to-save embed_tokens,lm_head --train-lr 3e-3 --questions 200 --writes 12"
  probe s00-unset X=1 $S
  probe s01-unset-again X=1 $S
  probe s02-aten-default ATEN_CPU_CAPABILITY=default $S
  probe s03-aten-avx2 ATEN_CPU_CAPABILITY=avx2 $S
  probe s04-cbwr-compatible MKL_CBWR=COMPATIBLE $S
  probe s05-cbwr-auto MKL_CBWR=AUTO $S
  probe s06-cbwr-avx2 MKL_CBWR=AVX2 $S
  probe s07-mkl-instr-sse42 MKL_ENABLE_INSTRUCTIONS=SSE4_2 $S
  probe s08-onednn-sse41 ONEDNN_MAX_CPU_ISA=SSE41 $S
  probe s09-threads2 X=1 $S --threads 2
  probe s10-deterministic X=1 $S --deterministic
  probe s11-bf16 X=1 $S --dtype bfloat16 --train-bf16 on
  probe s12-strict-onednn-det "$STRICT ONEDNN_MAX_CPU_ISA=AVX2" $S --deterministic
  probe s13-strict-onednn-det-again "$STRICT ONEDNN_MAX_CPU_ISA=AVX2" $S --deterministic
  probe s14-pinned "$PIN" $S
  probe s15-pinned-again "$PIN" $S
fi
