#!/bin/sh
# The device check: quick-sized kernel, model and RL rows headless through Dawn on this machine's
# GPU, and the same model's train step in PyTorch eager, into bench/results/gpu-<adapter>.json
# (and $OUT when set). Needs only the bundle (npm run build:device-check -> dist/device-check.tar.xz:
# Node, dawn.node, the Vulkan loader, the bundled benchmarks), python3 with torch, and a Vulkan
# driver. It first prints what it found: Vulkan ICDs, the loader, the adapter, its features and
# limits; it says so when the only adapter is a software one and exits 3 when there is none.
#   bench/device-check.sh [dist/device-check.tar.xz]      (PYTHON=... to pick the torch python)
# Against lavapipe here: VK_ICD_FILENAMES=/usr/share/vulkan/icd.d/lvp_icd.x86_64.json bench/device-check.sh
# Documented in docs/PERFORMANCE.md ("The device check").
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUNDLE=${1:-$ROOT/dist/device-check.tar.xz}
LIMIT=${DEVICE_CHECK_LIMIT_S:-300}
[ -f "$BUNDLE" ] || { echo "no bundle at $BUNDLE: build it with npm run build:device-check" >&2; exit 2; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
START=$(date +%s)
tar -xJf "$BUNDLE" -C "$WORK"
D=$WORK/device-check

echo "== Vulkan ICDs"
if [ -n "${VK_ICD_FILENAMES:-}${VK_DRIVER_FILES:-}" ]; then
  echo "VK_ICD_FILENAMES=${VK_ICD_FILENAMES:-} VK_DRIVER_FILES=${VK_DRIVER_FILES:-}"
fi
found=0
for dir in /etc/vulkan/icd.d /usr/share/vulkan/icd.d /usr/local/share/vulkan/icd.d; do
  for f in "$dir"/*.json; do
    [ -f "$f" ] || continue
    found=1
    lib=$(sed -n 's/.*"library_path"[^"]*"\([^"]*\)".*/\1/p' "$f" | head -n 1)
    echo "$f -> $lib"
  done
done
[ "$found" = 1 ] || echo "no ICD files in /etc/vulkan/icd.d, /usr/share/vulkan/icd.d, /usr/local/share/vulkan/icd.d"
if command -v nvidia-smi >/dev/null 2>&1; then nvidia-smi -L || true; fi

echo "== Vulkan loader"
if ldconfig -p 2>/dev/null | grep -q 'libvulkan\.so\.1 '; then
  ldconfig -p | grep 'libvulkan\.so\.1 ' | head -n 1
elif [ -f "$D/lib/libvulkan.so.1" ]; then
  echo "none on this machine: using the bundled one ($(cat "$D/lib/libvulkan1.version" 2>/dev/null || echo Debian libvulkan1))"
  LD_LIBRARY_PATH="$D/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export LD_LIBRARY_PATH
else
  echo "none on this machine and none bundled: Dawn will find no Vulkan device" >&2
fi

left() { echo $((LIMIT - ($(date +%s) - START))); }
cd "$D"
timeout "$(left)" ./node check.mjs --out "$WORK/ours.json" ${DEVICE_CHECK_ARGS:-}
PY=${PYTHON:-python3}
if "$PY" -c "import torch" 2>/dev/null; then
  timeout "$(left)" "$PY" torch_baseline.py --spec "$WORK/ours.json" --out "$WORK/torch.json" || echo "the PyTorch baseline failed"
else
  echo "no PyTorch for $PY: the rows go without the torch baseline"
fi
./node check.mjs --merge "$WORK/ours.json" "$WORK/torch.json" --results "$ROOT/bench/results"
if [ -n "${OUT:-}" ]; then cp "$ROOT"/bench/results/gpu-*.json "$OUT"/ 2>/dev/null || true; fi
echo "took $(( $(date +%s) - START )) s"
