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
#    projection exceeds MAX_MINUTES, since a session that ends mid-run loses the run.
# 3. Remove what the probe made (results/, resources/models/, resources/checkpoints/), so every job
#    of the DAG runs and nothing resumes, then `make paper`, with its start and end noted.
# 4. Write benchmarks/default-run.md from the run's own files, copy results/table1*.md into the
#    README's table blocks (tests/test_readme.py compares them), and commit the small outputs that
#    main tracks under results/ together with paper/, README.md and benchmarks/default-run.md.
#
# Then, by hand: read the rendered paper (issue 19, item 3), check `snakemake -n` in RUN says
# "Nothing to be done", and take the branch into main:
#   git fetch RUN ship-run && git merge --ff-only FETCH_HEAD
set -euo pipefail
run=${1:?usage: benchmarks/next-run/ship.sh RUN [PATCH ...]}
shift
max_minutes=${MAX_MINUTES:-150}
[ -e "$run" ] && { echo "ship.sh: $run exists; give a new directory" >&2; exit 2; }
patches=()
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
if [ "${PROBE:-1}" = 0 ]; then
  echo "ship.sh: PROBE=0: no probe; the run starts whatever its length"
else
  probe_or_stop
fi

# -- 3. the run, from nothing
rm -rf results resources/models resources/checkpoints logs benchmarks/runs .snakemake
mkdir results && git checkout -q -- results/.gitkeep  # no shipped output left for Snakemake to take as done
start=$(date +%s)
make paper
end=$(date +%s)
echo "default run: $(( (end - start) / 60 )) min"

# -- 4. the record
.venv/bin/python benchmarks/default_run_report.py --run . --start "$start" --end "$end" --out benchmarks/default-run.md
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
git commit -qm "Shipped default run: $(( (end - start) / 60 )) min, every job from nothing"
echo "committed on ship-run in $run; untracked outputs the run made (add any that belong in the record):"
git status --short --ignored results | grep -v '^!! results/\(data\|eval\|erasure\|train\|train_reader\|sft\|sft_reader\|curve\|streams\|readcost\|eviction\|locomo\)/' | head -20
