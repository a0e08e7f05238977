#!/usr/bin/env bash
# What a session lent an NVIDIA GPU runs there, in one call (the device tool of this workplace; README "GPU"):
# the GPU tests (every sample at its test sizes and at ~2M elements, the cupy/torch API, the bench model case),
# the differential censuses of random programs and random scan programs on `cuda`, and `gir bench` on cuda.
# Everything lands in OUT/gpu-check.tar.gz (logs, bench JSON/CSV/PNGs) plus OUT/summary.txt.
#
#   [DEADLINE=420] [SUITES='softmax scan'] [PROBE=0] [OLD=DIR] bash tests/gpu_codegen/device_check.sh OUT [BENCH_DTYPES...]
#   e.g. ... "$OUT" f32 f16,bf16
#
# Before the suites, the odd-size cases: the programs in tests/gpu_codegen/odd/ and a few samples timed at sizes whose
# rows start off a 32-byte sector (M = N = 4093) and at the aligned 4096, and -- with OLD=DIR, a copy of an earlier
# tree of this repository (git archive REV | tar -x -C DIR) -- the same programs at 4093 compiled by that tree.
# PROBE=0 leaves out probe_blocks.py (the block-dispatch measurement); SANITIZE=0 the compute-sanitizer runs;
# ODD=0 the odd-size cases.
#
# The GPU machine has no package index: islpy, z3-solver, lark and interegular travel as wheels for its Python in
# .whl/ (pip download --only-binary=:all: --python-version 3.12 ...), the package metadata (entry points) as the
# gir_compiler.egg-info an editable install leaves in the repository root.
set -uo pipefail
out=${1:?usage: device_check.sh OUT [BENCH_DTYPES...]}; shift
dtypes=("${@:-f32}")
deadline=${DEADLINE:-420}   # seconds after the start: no bench suite starts later; the tests stop at 150
work=/tmp/gpu-check; rm -rf "$work"; mkdir -p "$work" "$out"
export PYTHONUNBUFFERED=1
if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    || { echo "wheel install failed"; exit 1; }
  export PYTHONPATH=/tmp/site:$PWD
else
  export PYTHONPATH=$PWD
fi
summary="$out/summary.txt"
{ nvidia-smi -L; python3 -c "import gir.targets.cuda as c, cupy; print('cuda available:', c.available(), 'cupy', cupy.__version__)"; } 2>&1 | tee "$summary"

# tests and censuses side by side (CPU-bound compiles; the GPU is idle most of the time)
timeout 150 python3 -m pytest -q -n 8 -p no:cacheprovider -rs tests/gpu_codegen/test_codegen_gpu.py \
  tests/api/test_cuda_path.py tests/bench/test_bench_model.py >"$work/pytest.log" 2>&1 &
census() {  # census SCRIPT COUNT CHUNKS: seeds 0..COUNT-1 in CHUNKS processes, one log
  local script=$1 count=$2 chunks=$3 step=$(( ($2 + $3 - 1) / $3 )) k
  for ((k = 0; k < count; k += step)); do
    timeout 150 python3 "tests/differential/$script" "$k" "$step" cuda >"$work/${script%.py}.$k.log" 2>&1 &
  done
  wait
  cat "$work/${script%.py}".*.log >"$work/${script%.py}.log"
}
sanitize() {  # compute-sanitizer (racecheck, memcheck) on the odd-size scan programs at small sizes off the sector,
  local f n tool   # one process per program, none started after `stop` (seconds since the epoch)
  command -v compute-sanitizer >/dev/null || { echo "compute-sanitizer: not found" >"$work/sanitize.none.log"; return; }
  for f in tests/gpu_codegen/odd/*.gir; do
    for n in M=517,N=301 M=3,N=40001 M=4001,N=37; do
      for tool in racecheck memcheck; do
        (( $(date +%s) < stop )) || { echo "=== $tool $f $n: not run (time)"; continue; }
        echo "=== $tool $f $n: $(timeout 40 compute-sanitizer --tool "$tool" --print-limit 5 python3 -m gir run "$f" \
          --target cuda --sizes "$n" 2>&1 | grep -E "SUMMARY|Hazard|rror|pass|fail|FAIL" | head -6 | tr '\n' ' ')"
      done
    done >"$work/sanitize.$(basename "$f").log" 2>&1 &
  done
  wait
}
census diffrun.py 240 4 &
census scanprog.py 240 4 &
if [[ ${SANITIZE:-1} != 0 ]]; then bash -c "work=$work stop=$(( $(date +%s) + 110 )); $(declare -f sanitize); sanitize" & fi
wait
{ echo "--- pytest"; tail -15 "$work/pytest.log"
  for s in diffrun scanprog; do
    echo "--- $s census on cuda (seeds 0..239)"; grep -h "programs fail" "$work/$s".*.log
    grep -h "^  cuda:" "$work/$s.log" | cut -c1-110 | sort | uniq -c | sort -rn | head -8
  done
  echo "--- compute-sanitizer (racecheck, memcheck) on tests/gpu_codegen/odd at small sizes"; cat "$work"/sanitize.*.log 2>/dev/null
} 2>&1 | tee -a "$summary"

# what a block costs (the data of the cost model's block_s), then timings alone on the GPU, one suite at a time
# (a suite cut off by the deadline loses only itself)
if [[ ${PROBE:-1} != 0 ]]; then
  { echo "--- probe_blocks.py"; timeout 60 python3 tests/gpu_codegen/probe_blocks.py; } 2>&1 | tee -a "$summary"
fi
odd=(tests/gpu_codegen/odd/*.gir samples/cumsum.gir samples/mse_loss.gir samples/col_sum.gir samples/transpose2d.gir)
odd_bench() {  # odd_bench TAG SIZE [TREE]: the odd-size programs at M = N = SIZE, compiled by the gir of TREE
  local tag=$1 n=$2 tree=${3:-$PWD} files=("${odd[@]/#/$PWD/}")
  # `python3 -m` puts the working directory first on sys.path: run from the tree whose compiler is wanted (the
  # PYTHONPATH entries, this tree's package metadata among them, come after it)
  (cd "$tree" && timeout 75 python3 -m gir bench "${files[@]}" --sizes "M=$n,N=$n" --target cuda --seed 0 \
    --baselines none -q -o "$work/odd-$tag") >"$work/odd-$tag.log" 2>&1
  { echo "--- odd sizes: $tag (rc $?, ${SECONDS}s)"; cat "$work/odd-$tag.log"; } | tee -a "$summary"
}
if [[ ${ODD:-1} != 0 ]]; then
  odd_bench new-4093 4093
  odd_bench new-4096 4096
  if [[ -n ${OLD:-} ]]; then odd_bench old-4093 4093 "$(cd "$OLD" && pwd)"; fi
fi
for d in "${dtypes[@]}"; do
  for suite in ${SUITES:-softmax norm reduce transpose elementwise scan}; do
    left=$(( deadline - SECONDS ))
    if (( left < 20 )); then echo "--- deadline: bench $suite $d not run" | tee -a "$summary"; continue; fi
    tag=${d//,/-}-$suite
    timeout "$left" python3 -m gir bench "$suite" --target cuda --dtypes "$d" --seed 0 --baselines eager -q \
      -o "$work/bench-$tag" >"$work/bench-$tag.log" 2>&1
    { echo "--- gir bench $suite --target cuda --dtypes $d (rc $?, ${SECONDS}s)"; cat "$work/bench-$tag.log"; } \
      | tee -a "$summary"
  done
done
tar -C /tmp -czf "$out/gpu-check.tar.gz" gpu-check
