#!/usr/bin/env bash
# The shipped default run (issue 19) in one command, started from the root of a checkout of main:
#
#   benchmarks/next-run/ship.sh RUN [PATCH ...]        (MAX_MINUTES=150 by default)
#   PROBE=0 benchmarks/next-run/ship.sh RUN [PATCH ...]  (no probe: the run starts whatever its length)
#
# 1. Clone this checkout's HEAD into RUN (a new directory), apply each PATCH there and commit them
#    on branch `ship-run` (no patch: the branch is HEAD itself).
# 2. Set up (`make setup`) and probe the machine: seed 137's policy SFT set, then two 60-step
#    trainings of the policy recipe side by side, one thread each (how the run pairs its training
#    jobs). The run's wall time is projected from the 2026-12-04 run (140.7 min on a Xeon VM whose
#    policy jobs trained at 158 tokens/s each, two side by side); the script stops there when the
#    projection exceeds MAX_MINUTES, since a session that ends mid-run stops it (see RESUME=1).
# 3. Remove what the probe made (results/, resources/models/, resources/checkpoints/), so every job
#    of the DAG runs and nothing resumes, then `snakemake --cores 4 --resources gpu=1` (what
#    `make paper` runs after its set-up), with its start and end noted.
# 4. Write benchmarks/default-run.md from the run's own files, copy results/table1*.md into the
#    README's table blocks (tests/test_readme.py compares them), and commit the small outputs that
#    main tracks under results/ together with paper/, README.md and benchmarks/default-run.md.
#
# A session's end kills the run. The next session continues it (same clone, code unchanged):
#
#   RESUME=1 benchmarks/next-run/ship.sh RUN
#
# which unlocks Snakemake, runs the same command with --rerun-incomplete (jobs killed at the stop
# run again from their start; finished jobs are kept) and then does step 4. While Snakemake runs, a
# heartbeat writes the time to RUN/.git/ship/alive every 30 s; the stretch from its last beat to
# the resume is left out of the total and named in benchmarks/default-run.md (--gap).
#
# Then, by hand: read the rendered paper (issue 19, item 3), check `snakemake -n` in RUN says
# "Nothing to be done", and take the branch into main:
#   git fetch RUN ship-run && git merge FETCH_HEAD
set -euo pipefail
run=${1:?usage: benchmarks/next-run/ship.sh RUN [PATCH ...]   or   RESUME=1 benchmarks/next-run/ship.sh RUN}
shift
max_minutes=${MAX_MINUTES:-150}

# Snakemake with a heartbeat beside it; the run's state lives in .git/ship/ (outside the work tree).
snakemake_with_heartbeat() {
  ( while true; do date +%s > .git/ship/alive; sleep 30; done ) &
  local beat=$!
  local rc=0
  .venv/bin/snakemake --cores 4 --resources gpu=1 "$@" || rc=$?
  kill "$beat"
  return "$rc"
}

# -- 1. the clone, its patches and its environment
new_clone() {
  [ -e "$run" ] && { echo "ship.sh: $run exists; give a new directory" >&2; exit 2; }
  local patches=() p
  for p in "$@"; do patches+=("$(realpath "$p")"); done
  git clone -q . "$run"
  cd "$run"
  export PATH="$PWD/.venv/bin:$PATH"  # the rules call `clerk` (as `make paper` arranges)
  git checkout -q -b ship-run
  for p in "${patches[@]}"; do git apply "$p"; done
  if [ ${#patches[@]} -gt 0 ]; then
    git add -A && git commit -qm "Ship run: $(for p in "${patches[@]}"; do basename "$p"; done | paste -sd' ')"
  fi
  make setup
}

# -- 2. probe (skipped with PROBE=0)
probe_or_stop() {
  probe=$(mktemp -d)
  .venv/bin/snakemake --cores 2 results/sft/137 > "$probe/sft.log" 2>&1
  source benchmarks/task_sft.sh  # train_recipe: the benchmarks' one copy of the training flags
  for lane in a b; do
    mkdir -p "$probe/$lane"
    train_recipe results/sft/137 resources/models/smollm2-135m 137 60 0 "$probe/$lane" "$probe/out-$lane" &
  done
  wait
  projected=$(.venv/bin/python - "$probe" <<'EOF'
import json, sys
rates = []
for lane in "ab":
    m = json.load(open(f"{sys.argv[1]}/out-{lane}/metrics.json"))
    rates.append(m["tokens_seen"] / m["seconds_this_run"])
print(f"{140.7 * 158 / (sum(rates) / 2):.0f}")
print(f"probe: {rates[0]:.0f} and {rates[1]:.0f} tokens/s per job, side by side", file=sys.stderr)
EOF
  )
  rm -rf "$probe"
  echo "projected wall time of the default run: ~$projected min (limit $max_minutes; the probe assumes an idle machine)"
  if [ "$projected" -gt "$max_minutes" ]; then
    echo "ship.sh: stopping before the run: too slow a machine for one session (MAX_MINUTES=$max_minutes)" >&2
    exit 3
  fi
}

# -- 3. the run, from nothing; or its continuation after a stop (RESUME=1)
run_from_nothing() {
  rm -rf results resources/models resources/checkpoints logs benchmarks/runs .snakemake
  mkdir results && git checkout -q -- results/.gitkeep  # no shipped output left for Snakemake to take as done
  mkdir -p .git/ship && date +%s > .git/ship/start && : > .git/ship/gaps
  snakemake_with_heartbeat
}

resume() {
  [ -s "$run/.git/ship/start" ] && [ -s "$run/.git/ship/alive" ] || {
    echo "ship.sh: $run has no run of ship.sh to resume ($run/.git/ship/start and alive)" >&2; exit 2; }
  cd "$run"
  export PATH="$PWD/.venv/bin:$PATH"
  echo "$(cat .git/ship/alive) $(date +%s)" >> .git/ship/gaps  # stopped at the last beat, resumed now
  .venv/bin/snakemake --unlock > /dev/null
  snakemake_with_heartbeat --rerun-incomplete
}

if [ "${RESUME:-0}" = 1 ]; then
  [ $# -eq 0 ] || { echo "ship.sh: RESUME=1 takes the run directory only, not patches" >&2; exit 2; }
  resume
else
  new_clone "$@"
  if [ "${PROBE:-1}" = 0 ]; then
    echo "ship.sh: PROBE=0: no probe; the run starts whatever its length"
  else
    probe_or_stop
  fi
  run_from_nothing
fi
end=$(date +%s)
start=$(cat .git/ship/start)
gaps=()
while read -r stopped resumed; do gaps+=(--gap "$stopped" "$resumed"); done < .git/ship/gaps
echo "default run: $(( (end - start) / 60 )) min from start to end, $(wc -l < .git/ship/gaps) stop(s) left out"

# -- 4. the record
minutes=$(.venv/bin/python benchmarks/default_run_report.py --run . --start "$start" --end "$end" "${gaps[@]}" \
  --out benchmarks/default-run.md)
.venv/bin/python - <<'EOF'
import re
from pathlib import Path
readme = Path("README.md")
text = readme.read_text(encoding="utf-8")
for name in ("table1", "table1_cost"):
    body = Path(f"results/{name}.md").read_text(encoding="utf-8").strip()
    text, n = re.subn(rf"(<!-- {name}:begin -->\n).*?(<!-- {name}:end -->)", lambda m: m[1] + body + "\n" + m[2],
                      text, flags=re.S)
    assert n == 1, f"README has no {name} block"
readme.write_text(text, encoding="utf-8")
EOF
git ls-files -z results | xargs -0 git add -f -A --
git add paper README.md benchmarks/default-run.md
git commit -qm "Shipped default run: $minutes min, every job from nothing"
echo "committed on ship-run in $run; untracked outputs the run made (add any that belong in the record):"
git status --short --ignored results | grep -v '^!! results/\(data\|eval\|erasure\|train\|train_reader\|sft\|sft_reader\|curve\|streams\|readcost\|eviction\|locomo\)/' | head -20 || true  # grep finds none: nothing to add
