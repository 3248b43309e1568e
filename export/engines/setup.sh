#!/usr/bin/env bash
# npm run engines:setup: the Python environment the engines test layer runs verl, TRL,
# transformers and PEFT in: a venv under the user's cache with the exact versions of
# export/engines/requirements.txt, every other package held by export/engines/constraints.txt
# (torch is the CPU build: no resolver may swap in a CUDA one). A pin that cannot be met fails
# the command; so does a version that differs after the install.
#   npm run engines:setup              make it, or say it is up to date
#   LAB_ENGINES_VENV=DIR npm run engines:setup   somewhere else (the tests read the same variable)
# torch 2.13.0+cpu comes from pip's configured find-links or indexes; where pip has none that
# holds it, point PIP_EXTRA_INDEX_URL (or PIP_FIND_LINKS) at PyTorch's CPU wheels.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
VENV="${LAB_ENGINES_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/agentic-rl-lab/engines-venv}"
REQ="$HERE/requirements.txt"
CON="$HERE/constraints.txt"
STAMP="$VENV/.lab-engines-stamp"
want="$(cat "$REQ" "$CON" | sha256sum | cut -d' ' -f1)"

if [ -x "$VENV/bin/python" ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ]; then
  echo "engines venv up to date: $VENV"
  exit 0
fi

PY="${LAB_ENGINES_PYTHON:-}"
if [ -z "$PY" ]; then
  # verl 0.9.1 takes Python 3.10-3.12, TRL and transformers 3.11 or newer.
  for c in python3.11 python3.12 python3; do
    if command -v "$c" >/dev/null 2>&1 && "$c" -c 'import sys; sys.exit(0 if (3, 11) <= sys.version_info[:2] <= (3, 12) else 1)'; then
      PY="$c"
      break
    fi
  done
fi
if [ -z "$PY" ]; then
  echo "engines:setup: needs Python 3.11 or 3.12 (verl 0.9.1 and TRL 1.16.0); set LAB_ENGINES_PYTHON to one" >&2
  exit 1
fi
if ! "$PY" -c 'import ensurepip, venv' 2>/dev/null; then
  echo "engines:setup: $PY has no venv module (Debian: apt-get install python3-venv)" >&2
  exit 1
fi

t0=$(date +%s)
rm -rf "$VENV"
mkdir -p "$(dirname "$VENV")"
"$PY" -m venv "$VENV"
# --no-compile: pip would byte-compile all 17,700 modules (about 45 s here); Python compiles the
# few hundred the engines import on first use instead.
"$VENV/bin/python" -m pip install --quiet --require-virtualenv --no-input --progress-bar off --no-compile \
  -r "$REQ" -c "$CON"
"$VENV/bin/python" -m pip check
# Every pin as installed (pip would not say if a find-links wheel with another local version won).
"$VENV/bin/python" - "$REQ" "$CON" <<'PYEOF'
import sys
from importlib.metadata import PackageNotFoundError, version

bad = []
for path in sys.argv[1:]:
    for line in open(path):
        line = line.split("#")[0].strip()
        if not line or "==" not in line:
            continue
        name, want = (s.strip() for s in line.split("=="))
        name = name.split("[")[0]
        try:
            got = version(name)
        except PackageNotFoundError:
            if path.endswith("requirements.txt"):
                bad.append(f"{name}: not installed (wanted {want})")
            continue
        if got != want:
            bad.append(f"{name}: {got} installed, {want} pinned ({path})")
if bad:
    sys.exit("engines:setup: the venv does not hold the pinned versions:\n  " + "\n  ".join(bad))
PYEOF
echo "$want" >"$STAMP"
echo "engines venv made in $(( $(date +%s) - t0 )) s: $VENV"
