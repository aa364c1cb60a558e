#!/usr/bin/env bash
# One command for a GPU machine (no Rust, no network): find the CUDA libraries, install the
# remat wheel from dist/, run the CUDA and checkpoint tests, the whole test suite, and the
# remat-vs-PyTorch GPU benchmark. Run from anywhere; it works in the repository root:
#
#     OUT=/some/dir bash benches/gpu_suite.sh
#
# Everything it prints also goes to $OUT/gpu_suite.log; per-step logs and the benchmark table
# ($OUT/gpu_results.md) land in $OUT too (default: ./gpu_out). Each step runs under `timeout`
# and a failure in one step does not stop the others; the steps share a budget of
# GPU_SESSION_BUDGET_S seconds (default 530, under 9 minutes), with time held back for the
# benchmark. The exit status is 0 when every step passed, 1 otherwise.
#
# Environment knobs: OUT, PYTHON (interpreter, default python then python3), DIST_DIR (where
# the wheels are, default dist), REMAT_SITE (install target, default /tmp/site),
# GPU_SESSION_BUDGET_S, GPU_BENCH_RESERVE_S (most seconds for the benchmark, default 240),
# GPU_CUDA_TESTS_CAP (most seconds for the CUDA test cases, default 150),
# GPU_PYTEST_EXTRA (extra pytest arguments, e.g. "-n 12 --timeout 120" where pytest-xdist and
# pytest-timeout are installed), GPU_COMPARE_ARGS (extra arguments for benches/gpu_compare.py, e.g.
# "--runs 5"), GPU_EXTRA_CMD (a shell command run after the benchmarks, e.g. a diagnostic
# script), GPU_SKIP_BENCH=1 (leave out the benchmarks and the kernel profile), GPU_SKIP_SUITE=1
# (leave out the whole-suite run), GPU_SKIP_PROFILE=1 (leave out the Nsight Compute profile),
# REMAT_SESSION_NO_HYPOTHESIS=1 (act as if hypothesis were missing; to test the
# fallback). Wheels in DIST_DIR other than remat's (numpy, pytest, hypothesis, ...) are
# installed into REMAT_SITE too.

set -u
cd "$(dirname "$0")/.." || exit 1
REPO=$PWD
OUT=${OUT:-$REPO/gpu_out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
BUDGET_S=${GPU_SESSION_BUDGET_S:-530}
BENCH_RESERVE_S=${GPU_BENCH_RESERVE_S:-240}
DIST_DIR=${DIST_DIR:-dist}
SITE=${REMAT_SITE:-/tmp/site}
T0=$(date +%s)
exec > >(tee -a "$OUT/gpu_suite.log") 2>&1
TEE_PID=$!

if [ -n "${PYTHON:-}" ]; then PY=$PYTHON
elif command -v python >/dev/null 2>&1; then PY=python
else PY=python3
fi

elapsed() { echo $(( $(date +%s) - T0 )); }
left() { echo $(( BUDGET_S - $(elapsed) )); }
SUMMARY=()
FAILED=0

banner() { echo; echo "=== [$(elapsed) s] $*"; }

# run_step NAME CAP_S RESERVE_S LOG CMD...: run CMD under `timeout`, for at most CAP_S seconds
# and at most what is left of the budget minus RESERVE_S (held back for later steps); tee its
# output into $OUT/LOG; record the outcome for the summary.
run_step() {
    local name=$1 cap=$2 reserve=$3 log=$4
    shift 4
    local t
    t=$(( $(left) - reserve ))
    [ "$t" -gt "$cap" ] && t=$cap
    if [ "$t" -lt 15 ]; then
        banner "$name"
        echo "SKIPPED: not enough time left in the ${BUDGET_S} s budget (${reserve} s held back for later steps)"
        SUMMARY+=("$(printf '%-52s skipped (no time left)' "$name")")
        FAILED=1
        return
    fi
    banner "$name (time limit ${t} s)"
    local s rc
    s=$(date +%s)
    timeout -k 10 "$t" "$@" 2>&1 | tee "$OUT/$log"
    rc=${PIPESTATUS[0]}
    local took=$(( $(date +%s) - s ))
    local what="rc=$rc"
    [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ] && what="TIMED OUT after ${t} s (rc=$rc)"
    echo "--- $name: $what, ${took} s (log: $OUT/$log)"
    SUMMARY+=("$(printf '%-52s %-32s %4d s' "$name" "$what" "$took")")
    [ "$rc" -eq 0 ] || FAILED=1
}

banner "gpu_suite.sh in $REPO; OUT=$OUT; budget ${BUDGET_S} s; python: $(command -v "$PY")"
"$PY" --version
uname -a
ldd --version 2>&1 | head -1  # the wheel needs the glibc it was built against (or newer)

# -- (a) the GPU and the NVIDIA libraries ---------------------------------------------------------
banner "nvidia-smi"
if command -v nvidia-smi >/dev/null 2>&1; then
    timeout 30 nvidia-smi 2>&1 | tee "$OUT/nvidia-smi.txt"
    DRIVER_CUDA=$(grep -o 'CUDA Version: *[0-9]*' "$OUT/nvidia-smi.txt" | grep -o '[0-9]*$' | head -1)
else
    echo "nvidia-smi not found"
    DRIVER_CUDA=
fi
echo "driver's CUDA major version: ${DRIVER_CUDA:-unknown}"

banner "looking for libnvrtc / libcublas / libcuda (find /, at most 60 s)"
timeout 60 find / \( -path /proc -o -path /sys -o -path /dev -o -path /run \) -prune -o \
    \( -name 'libnvrtc.so*' -o -name 'libcublas.so*' -o -name 'libcublasLt.so*' \
       -o -name 'libcuda.so*' \) -print 2>/dev/null > "$OUT/cuda_libs.txt"
head -40 "$OUT/cuda_libs.txt"
echo "($(wc -l < "$OUT/cuda_libs.txt") files)"
# Directories holding NVRTC or cuBLAS, best first: remat's probe takes the first directory
# with a usable name, so put the newest CUDA major the driver supports first (13 is what remat
# is built for), newer-than-driver ones last; the driver's own directory after them.
DIRS=$(DRIVER_CUDA="$DRIVER_CUDA" "$PY" - "$OUT/cuda_libs.txt" <<'EOF'
import os, re, sys
driver = int(os.environ["DRIVER_CUDA"]) if os.environ.get("DRIVER_CUDA", "").isdigit() else 99
best = {}
for path in open(sys.argv[1]).read().split():
    name, d = os.path.basename(path), os.path.dirname(path)
    m = re.match(r"lib(nvrtc|cublas)\.so\.(\d+)", name)
    if m:
        major = int(m.group(2))
        key = (0 if major <= driver else 1, -major)
    elif name.startswith(("libnvrtc.so", "libcublas.so")):
        key = (2, 0)
    elif name.startswith("libcuda.so"):
        key = (3, 0)
    else:
        continue
    best[d] = min(best.get(d, key), key)
print(":".join(sorted(best, key=lambda d: (best[d], d))))
EOF
)
if [ -n "$DIRS" ]; then
    export REMAT_CUDA_LIB_DIRS="$DIRS${REMAT_CUDA_LIB_DIRS:+:$REMAT_CUDA_LIB_DIRS}"
fi
echo "REMAT_CUDA_LIB_DIRS=${REMAT_CUDA_LIB_DIRS:-<unset: nothing found>}"

# -- (b) install the wheel -------------------------------------------------------------------------
banner "installing remat from $DIST_DIR into $SITE"
REMAT_WHL=$(ls -t "$DIST_DIR"/remat-*.whl 2>/dev/null | head -1)
OTHER_WHL=$(ls "$DIST_DIR"/*.whl 2>/dev/null | grep -v '/remat-' || true)
if [ -n "$REMAT_WHL" ]; then
    ls -l "$DIST_DIR"/*.whl
    [ "$(ls "$DIST_DIR"/remat-*.whl | wc -l)" -gt 1 ] && echo "several remat wheels: using the newest, $REMAT_WHL"
    rm -rf "$SITE" && mkdir -p "$SITE"
    # shellcheck disable=SC2086  # OTHER_WHL is a list of paths without spaces
    if ! timeout 120 "$PY" -m pip install --no-index --no-deps --target "$SITE" "$REMAT_WHL" $OTHER_WHL; then
        echo "WARNING: pip install failed; unpacking the wheel(s) into $SITE instead"
        for w in "$REMAT_WHL" $OTHER_WHL; do "$PY" -m zipfile -e "$w" "$SITE"; done
    fi
    export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"
    WHEEL_NOTE="wheel $(basename "$REMAT_WHL")"
else
    echo "WARNING: no remat-*.whl in $DIST_DIR: falling back to the remat already installed (if any)"
    WHEEL_NOTE="no wheel: the installed remat"
fi
echo "PYTHONPATH=${PYTHONPATH:-}"

# -- (c) what Python has ---------------------------------------------------------------------------
banner "Python modules"
"$PY" - <<'EOF' | tee "$OUT/modules.txt"
import importlib, os
for name in ("numpy", "pytest", "hypothesis", "torch", "sklearn", "tqdm", "remat"):
    try:
        m = importlib.import_module(name)
        print(f"{name}: {getattr(m, '__version__', '?')} ({os.path.dirname(m.__file__)})")
    except Exception as e:  # noqa: BLE001
        print(f"{name}: MISSING ({type(e).__name__}: {e})")
EOF
has() { grep -q "^$1: [^M]" "$OUT/modules.txt"; }
[ "${REMAT_SESSION_NO_HYPOTHESIS:-0}" = 1 ] && sed -i 's/^hypothesis: .*/hypothesis: MISSING (forced by REMAT_SESSION_NO_HYPOTHESIS=1)/' "$OUT/modules.txt"
if has remat && [ -n "$REMAT_WHL" ] && ! grep -q "^remat: .*($SITE" "$OUT/modules.txt"; then
    echo "WARNING: remat is imported from outside $SITE (see above), not from the wheel"
fi

run_step "remat CUDA smoke test" 90 0 smoke.log "$PY" - <<'EOF'
import remat
print("remat", remat.__version__, "from", remat.__file__)
print("cuda.is_available():", remat.cuda.is_available(), "device_count():", remat.cuda.device_count())
try:
    x = remat.ones(4, 3, device="cuda")
    y = (x * 2).sum()
    print("ones(4, 3, cuda) * 2 summed:", y.item(), "on", x.device)
    a = remat.randn(64, 64, device="cuda")
    print("matmul 64x64 max |cuda - cpu|:", float(abs((a @ a).cpu().numpy() - a.cpu().numpy() @ a.cpu().numpy()).max()))
    remat.cuda.synchronize()
    print("memory_allocated('cuda'):", remat.memory_allocated("cuda"))
except Exception as e:
    print(f"CUDA use failed: {type(e).__name__}: {e}")
    raise SystemExit(1)
EOF

# -- (d) tests -------------------------------------------------------------------------------------
PYTEST_FLAGS=(-q -p no:cacheprovider -rfEs)
ALL_TESTS=(tests)
IGNORE=()
if ! has sklearn || ! has tqdm; then
    echo "NOTE: scikit-learn or tqdm missing: tests/docs/test_examples.py (runs the examples) is left out"
    IGNORE+=(--ignore=tests/docs/test_examples.py)
fi
if ! has pytest; then
    echo "NOTE: pytest is missing: the test steps are skipped"
    SUMMARY+=("$(printf '%-52s skipped (no pytest)' 'tests')")
    FAILED=1
elif ! has numpy; then
    echo "NOTE: numpy is missing: remat cannot run; the test steps are skipped"
    SUMMARY+=("$(printf '%-52s skipped (no numpy)' 'tests')")
    FAILED=1
else
    if ! has hypothesis; then
        # conftest.py imports hypothesis: run without it, with its two device fixtures from a
        # small plugin, and only the test files that use neither hypothesis nor conftest.py.
        SHIM=$(mktemp -d /tmp/remat_pytest_shim.XXXX)
        cat > "$SHIM/remat_nohyp_fixtures.py" <<'EOF'
"""The device fixtures of tests/conftest.py, for runs without hypothesis (--noconftest)."""
import pytest

import remat


@pytest.fixture(params=["cpu", "cuda"])
def devices(request):
    if request.param == "cuda" and not remat.cuda.is_available():
        pytest.skip("CUDA not available")
    return request.param


@pytest.fixture
def device(devices):
    return devices
EOF
        # The helpers beside conftest.py (op_registry, _subprocess) are imported by name.
        export PYTHONPATH="$SHIM:$REPO/tests${PYTHONPATH:+:$PYTHONPATH}"
        PYTEST_FLAGS+=(--noconftest -p remat_nohyp_fixtures)
        mapfile -t ALL_TESTS < <(grep -L -E 'hypothesis|conftest' tests/*/test_*.py)
        echo "NOTE: hypothesis is missing: running only the test files that need neither it nor"
        echo "      conftest.py (--noconftest, device fixtures from a plugin): ${ALL_TESTS[*]}"
        echo "      left out: $(grep -l -E 'hypothesis|conftest' tests/*/test_*.py | tr '\n' ' ')"
    fi
    # The CUDA cases first (every test whose id names cuda, and the CUDA/checkpoint files),
    # all failures listed (no -x), then the benchmark, then the whole suite with what is left.
    # shellcheck disable=SC2086  # GPU_PYTEST_EXTRA is split on purpose
    run_step "pytest CUDA cases" "${GPU_CUDA_TESTS_CAP:-150}" $((BENCH_RESERVE_S + 60)) pytest_cuda.log \
        "$PY" -m pytest "${PYTEST_FLAGS[@]}" --maxfail=60 ${GPU_PYTEST_EXTRA:-} \
        ${IGNORE[@]+"${IGNORE[@]}"} -k "cuda or gpu" "${ALL_TESTS[@]}"
fi

# -- (e) the benchmarks ----------------------------------------------------------------------------
if [ "${GPU_SKIP_BENCH:-0}" != 1 ]; then
BENCH_T=$(( $(left) - 60 ))
[ "$BENCH_T" -gt "$BENCH_RESERVE_S" ] && BENCH_T=$BENCH_RESERVE_S
# shellcheck disable=SC2086  # GPU_COMPARE_ARGS is split on purpose
run_step "benches/gpu_compare.py" "$BENCH_T" 60 gpu_compare.log \
    "$PY" benches/gpu_compare.py --out "$OUT/gpu_results.md" --budget-s 20 \
    --worker-timeout 150 --total-timeout $(( BENCH_T > 40 ? BENCH_T - 25 : 15 )) ${GPU_COMPARE_ARGS:-}
run_step "benches/op_overhead.py --device cuda" 45 15 op_overhead.log \
    "$PY" benches/op_overhead.py --device cuda --repeats 5

# -- (e1) an extra command of the caller's (a diagnostic), with the environment set up above --
if [ -n "${GPU_EXTRA_CMD:-}" ]; then
    run_step "extra: $GPU_EXTRA_CMD" 60 60 extra.log bash -c "$GPU_EXTRA_CMD"
fi

# -- (e2) a kernel profile of a short run of each library (Nsight Compute, where installed) ------
if [ "${GPU_SKIP_PROFILE:-0}" = 1 ]; then
    echo "GPU_SKIP_PROFILE=1: no kernel profile"
elif command -v ncu >/dev/null 2>&1; then
    for lib in remat torch; do
        run_step "ncu profile ($lib, 8 layers)" 60 60 "ncu_$lib.log" \
            ncu --clock-control none --metrics gpu__time_duration.sum --csv \
            --log-file "$OUT/ncu_$lib.csv" "$PY" benches/gpu_profile.py run --lib "$lib"
    done
    "$PY" benches/gpu_profile.py summary "$OUT/ncu_remat.csv" "$OUT/ncu_torch.csv" \
        2>&1 | tee "$OUT/profile.md"
else
    echo "ncu not found: no kernel profile"
fi
fi  # GPU_SKIP_BENCH

# -- (f) the whole suite with the time that is left ----------------------------------------------
if has pytest && has numpy && [ "${GPU_SKIP_SUITE:-0}" != 1 ]; then
    # shellcheck disable=SC2086
    run_step "pytest (whole suite)" 400 5 pytest_all.log \
        "$PY" -m pytest "${PYTEST_FLAGS[@]}" --durations=10 ${GPU_PYTEST_EXTRA:-} \
        ${IGNORE[@]+"${IGNORE[@]}"} "${ALL_TESTS[@]}"
fi

# -- summary ---------------------------------------------------------------------------------------
banner "summary ($WHEEL_NOTE; REMAT_CUDA_LIB_DIRS=${REMAT_CUDA_LIB_DIRS:-unset})"
printf '%s\n' "${SUMMARY[@]}"
echo "total: $(elapsed) s of the ${BUDGET_S} s budget; files in $OUT:"
ls -l "$OUT"
exec >&- 2>&-
wait "$TEE_PID" 2>/dev/null  # let tee finish writing gpu_suite.log
exit "$FAILED"
