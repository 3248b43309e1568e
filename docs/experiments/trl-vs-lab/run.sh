#!/usr/bin/env bash
# The paired experiment: lab-llama-calculator in the lab (npm run train, WebGPU on lavapipe) and
# through its TRL export (TRL's GRPOTrainer on the CPU, tools through the local Node runner), the
# same recipe and schedule, seeds 1-3. Writes lab/seed-S (run folders) and trl/seed-S (the export
# with what TRL wrote, checkpoints dropped) here; `npm run compare -- lab trl` reads both.
# Needs `npm run engines:setup`. Run from the repository root:
#   bash docs/experiments/trl-vs-lab/run.sh [seeds...]
# TRL_ARM=trl-len128 TRL_ARGS="--max-completion-length 128" LAB=0 bash .../run.sh: a second TRL
# arm into trl-len128/ with TRL's completion budget widened (it counts tool turns), the lab not rerun.
set -euo pipefail
HERE=docs/experiments/trl-vs-lab
PY="${LAB_ENGINES_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/agentic-rl-lab/engines-venv}/bin/python"
WORK=$(mktemp -d)
ARM="${TRL_ARM:-trl}"
for s in "${@:-1 2 3}"; do
  for seed in $s; do
    node -e '
      const r = JSON.parse(require("fs").readFileSync("public/recipes/lab-llama-calculator.json", "utf8"));
      r.config.seed = Number(process.argv[1]);
      r.name = `lab-llama-calculator-seed-${process.argv[1]}`;
      process.stdout.write(JSON.stringify(r, null, 2));
    ' "$seed" > "$WORK/recipe-$seed.json"
    rm -rf "$HERE/$ARM/seed-$seed"
    if [ "${LAB:-1}" = 1 ]; then
      rm -rf "$HERE/lab/seed-$seed"
      npm run --silent train -- "$WORK/recipe-$seed.json" --out "$HERE/lab/seed-$seed" --quiet
      rm -f "$HERE/lab/seed-$seed"/{samples.jsonl,checkpoint*.safetensors,weights.safetensors}
    fi
    npm run --silent export -- trl "$WORK/recipe-$seed.json" --out "$HERE/$ARM/seed-$seed" >/dev/null
    # shellcheck disable=SC2086
    "$PY" "$HERE/$ARM/seed-$seed/train_trl.py" --model public/models/lab-llama --tools node ${TRL_ARGS:-} \
      > "$WORK/trl-$seed.log" 2>&1 || { tail -50 "$WORK/trl-$seed.log"; exit 1; }
    rm -rf "$HERE/$ARM/seed-$seed"/trl-out/checkpoint-*
  done
done
rm -rf "$WORK"
