#!/usr/bin/env bash
# Regenerates the export's facts tables from the engines installed in the engines venv
# (npm run engines:setup): export/verl-keys.json and export/verl-enums.json from verl's installed
# source, export/trl-keys.json from TRL's and transformers'. Each names the release it came from.
#   bash export/engines/facts.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
VENV="${LAB_ENGINES_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/agentic-rl-lab/engines-venv}"
PY="$VENV/bin/python"
[ -x "$PY" ] || { echo "no engines venv at $VENV: npm run engines:setup" >&2; exit 1; }
SITE="$("$PY" -c 'import os, verl; print(os.path.dirname(os.path.dirname(verl.__file__)))')"
ver() { "$PY" -c "from importlib.metadata import version; print(version('$1'))"; }
node export/tools/verl-keys.mjs "$SITE" --release "$(ver verl)" >export/verl-keys.json
node export/tools/verl-enums.mjs "$SITE" --release "$(ver verl)" >export/verl-enums.json
node export/tools/trl-keys.mjs "$SITE" "$SITE/transformers/training_args.py" "$(ver transformers)" \
  --release "$(ver trl)" >export/trl-keys.json
echo "facts from verl $(ver verl), TRL $(ver trl), transformers $(ver transformers) in $SITE"
