#!/usr/bin/env bash
# One-shot GPU check for a machine with NVIDIA GPUs (issue 5): runs bringup's one-GPU and node validations and
# prints their figures next to independent baselines: a plain torch.matmul timing (bf16, same shape) and, when
# nccl-tests is installed, all_reduce_perf (-b 8 -e 4G -f 2 -g <GPUs> -c 1). Target: under 5 minutes in all.
#
#   usage: benchmarks/gpu_check.sh                # from the repository root, in the venv that has torch (CUDA build)
#          DEVICE=cpu benchmarks/gpu_check.sh     # the same path on a machine without GPUs (figures are CPU figures)
#   env:   PY (python with torch; default .venv/bin/python), BRINGUP (default .venv/bin/bringup), OUT (result dir)
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
BRINGUP=${BRINGUP:-.venv/bin/bringup}
DEVICE=${DEVICE:-cuda}
OUT=${OUT:-$(mktemp -d /tmp/bringup-gpu-check.XXXXXX)}
STATE="$OUT/state"
mkdir -p "$STATE"
t_all=$(date +%s)
echo "bringup gpu_check: device=$DEVICE, results in $OUT"
"$PY" -c 'import torch,sys; print("torch", torch.__version__, "cuda", torch.version.cuda, "gpus", torch.cuda.device_count() if torch.cuda.is_available() else 0)' \
  || { echo "gpu_check: $PY cannot import torch; set PY=/path/to/python-with-torch" >&2; exit 3; }

run() {  # name, then the command; records wall seconds
  local name=$1; shift
  local t0; t0=$(date +%s.%N)
  "$@" > "$OUT/$name.out" 2> "$OUT/$name.err"
  local rc=$?
  local t1; t1=$(date +%s.%N)
  printf '%s\t%s\t%.1f\n' "$name" "$rc" "$(echo "$t1 - $t0" | bc)" >> "$OUT/times.tsv"
  return 0
}

run validate_gpu  "$BRINGUP" --state "$STATE" validate gpu  --device "$DEVICE" --python "$PY" --json
run validate_node "$BRINGUP" --state "$STATE" validate node --device "$DEVICE" --python "$PY" --json

# baseline 1: torch.matmul on its own (bf16 8192^3 on CUDA, fp32 1024^3 on CPU), best of 20 timed iterations
run torch_matmul "$PY" - "$DEVICE" <<'PYEOF'
import sys, time, torch
dev = sys.argv[1]
cuda = dev == "cuda"
n, dt = (8192, torch.bfloat16) if cuda else (1024, torch.float32)
a = torch.randn(n, n, device=dev, dtype=dt); b = torch.randn(n, n, device=dev, dtype=dt)
for _ in range(5): a @ b
best = 1e9
for _ in range(20):
    if cuda: torch.cuda.synchronize()
    t = time.perf_counter(); c = a @ b
    if cuda: torch.cuda.synchronize()
    best = min(best, time.perf_counter() - t)
print(f"{2 * n ** 3 / best / 1e12:.2f}")
PYEOF

# baseline 2: nccl-tests, when installed (one process, all GPUs, results checked)
if [ "$DEVICE" = cuda ] && command -v all_reduce_perf >/dev/null; then
  NGPU=$("$PY" -c 'import torch; print(torch.cuda.device_count())')
  run nccl_tests all_reduce_perf -b 8 -e 4G -f 2 -g "$NGPU" -c 1
fi

"$PY" - "$OUT" <<'PYEOF'
import json, re, sys, pathlib
out = pathlib.Path(sys.argv[1])
def load(name):
    try:
        return json.loads((out / f"{name}.out").read_text())
    except Exception as exc:  # a failed run prints its stderr below
        return {"error": str(exc)}
def rows(doc):
    return doc.get("results") or []
def pick(doc, test, metric):
    vals = [r.get("value") for r in rows(doc) if r.get("test") == test and r.get("metric") == metric]
    vals = [v for v in vals if isinstance(v, (int, float))]
    return max(vals) if vals else None
def largest_busbw(doc):
    pts = ((doc.get("series") or {}).get("points")) or []
    return pts[-1][1] if pts else None
def fmt(v):
    return "-" if v is None else (f"{v:.3g}" if isinstance(v, float) else str(v))
g, n = load("validate_gpu"), load("validate_node")
base = (out / "torch_matmul.out").read_text().strip() if (out / "torch_matmul.out").exists() else "?"
nccl = None
if (out / "nccl_tests.out").exists():  # bringup's own nccl-tests parser (repository root is on sys.path)
    sys.path.insert(0, str(pathlib.Path.cwd()))
    from wizard.parsers.nccl import parse_nccl_tests
    run = parse_nccl_tests((out / "nccl_tests.out").read_text())
    if run.rows:
        nccl = run.rows[-1].oop.busbw_gb_s
print()
print(f"{'figure':<38}{'bringup':>12}{'baseline':>12}  baseline source")
print(f"{'GEMM TFLOPS (best device)':<38}{fmt(pick(g, 'gemm', 'tflops')):>12}{base:>12}  torch.matmul alone")
print(f"{'all-reduce busbw GB/s (largest size)':<38}{fmt(largest_busbw(n)):>12}"
      f"{(fmt(nccl) if nccl is not None else 'not installed'):>14}  nccl-tests all_reduce_perf")
for name, doc in (("validate gpu", g), ("validate node", n)):
    print(f"{name}: verdict {doc.get('verdict', '?')}; " + "; ".join(
        f"{f['id']} {f['verdict']}" for f in doc.get("findings", [])[:12]))
print()
print("wall seconds per step:")
print((out / "times.tsv").read_text())
PYEOF
echo "total wall time: $(( $(date +%s) - t_all )) s (target: under 300 s on a GPU node)"
