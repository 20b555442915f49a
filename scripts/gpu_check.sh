#!/usr/bin/env bash
# The prepared GPU run of issue 6: one command on the lent GPU machine (H200; CuPy 14 for
# CUDA 13, torch and numpy are already there; nothing can be downloaded). From the repo root:
#
#     bash scripts/gpu_check.sh          # through the device tool: run(command=..., timeout_s=600)
#
# Stages, each under its own hard timeout (at most 9m40s in all), logs under $OUT (or
# ./gpu_out where OUT is unset):
#   1. env + kernel smoke  (scripts/gpu_smoke.py)                            smoke.log
#   2. the GPU tests: every test marked cuda or taking the `device` fixture,
#      on CUDA only (TENSORIX_TEST_DEVICE=cuda), but the op registry         pytest_cuda.log
#   3. the op registry on CUDA (tests/test_ops.py -m cuda: about 2,600
#      cases, values and first-order grads; CuPy compiles each ufunc/dtype
#      on first use, so in parallel with pytest-xdist)                       pytest_ops_cuda.log
#   4. benchmarks/bench_gpu.py against torch CUDA eager                      bench_gpu.md/.json,
#                                                                            bench.log
#   5. the rest of the suite (CPU tests on that machine's numpy/torch), in
#      parallel with pytest-xdist, as far as the time allows                 pytest_rest.log
# Stages 2 and 3 already ran in CI on the CuPy stand-in (tensorix/fakecupy/), so a
# failure here is about what the stand-in cannot check: real kernels, CuPy's numerics, or
# a CuPy rule the stand-in does not know (docs/gpu.md).
# The last lines printed are a summary, so the tool's output tail holds what matters.
# Written on a machine without a GPU: this script has never run (docs/gpu.md).
set -u
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/gpu_out}"
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 TENSORIX_TEST_DEVICE=cuda
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"  # no install needed: tensorix is pure Python
PY=python3
summary=()

stage() {  # stage NAME SECONDS LOGFILE COMMAND...
  local name=$1 secs=$2 log=$3; shift 3
  local t0=$SECONDS
  echo "=== $name (limit ${secs}s) ==="
  timeout --kill-after=10 "$secs" "$@" >"$OUT/$log" 2>&1
  local rc=$?
  tail -n 25 "$OUT/$log"
  summary+=("$name: rc=$rc in $((SECONDS - t0))s ($log)")
}

{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm --format=csv
  $PY -c "import sys, numpy, torch; print(sys.version); print('numpy', numpy.__version__,
  'torch', torch.__version__, 'cuda', torch.version.cuda)"
  git log --oneline -1; } >"$OUT/env.txt" 2>&1
cat "$OUT/env.txt"

stage "smoke" 90 smoke.log $PY scripts/gpu_smoke.py
# warnings stay errors (the project's rule) except CuPy's own (its bfloat16 is "experimental"):
# those are shown, not fatal, so one warning cannot fail every CUDA test of the first run
CUPY_WARN=(-W "default::Warning:cupy" -W "default::Warning:cupyx")
# pytest-xdist / pytest-timeout only where that machine has them (nothing can be installed
# there): without them a stage runs serially and only its hard `timeout` bounds it
plugin() { $PY -c "import $1" 2>/dev/null; }
par() { plugin xdist && echo "-n $1"; }
tmo() { plugin pytest_timeout && echo "--timeout=$1"; }
stage "pytest cuda" 120 pytest_cuda.log $PY -m pytest -q -ra -p no:cacheprovider -m cuda \
  $(tmo 100) -o addopts="" "${CUPY_WARN[@]}" --ignore=tests/test_ops.py tests
stage "pytest ops cuda" 120 pytest_ops_cuda.log $PY -m pytest -q -ra -p no:cacheprovider \
  -m cuda $(par 8) $(tmo 60) -o addopts="" "${CUPY_WARN[@]}" tests/test_ops.py
stage "bench" 200 bench.log $PY benchmarks/bench_gpu.py --out "$OUT" --budget 140
stage "pytest rest" 50 pytest_rest.log $PY -m pytest -q -p no:cacheprovider -m "not cuda" \
  $(par 12) -o addopts="" $(tmo 40) tests

echo "=== summary ==="
grep -E "^(OK|FAIL)|^smoke:" "$OUT/smoke.log" | tail -n 12
for log in pytest_cuda.log pytest_ops_cuda.log; do
  grep -E "passed|failed|error" "$OUT/$log" | tail -n 2
  grep -E "^FAILED|^ERROR" "$OUT/$log" | head -n 12
done
[ -f "$OUT/bench_gpu.md" ] && cat "$OUT/bench_gpu.md"
grep -E "passed|failed" "$OUT/pytest_rest.log" | tail -n 2
printf '%s\n' "${summary[@]}"
