#!/usr/bin/env bash
# The GPU engine's measurements in one prepared command, for a session that is lent an NVIDIA machine
# (docs/gpu.md, "Measuring"). It installs nothing from the network: numpy comes from the carried .whl/ (the
# image's numpy 2.5 breaks numba-cuda 0.30), the dev sequences from the carried .devdata/.
#
#   bash benchmarks/gpu_session.sh                 # on the GPU machine: every step, results under $OUT
#   DEVICE=cpu bash benchmarks/gpu_session.sh eval # here: the CPU engine's figures on the same .devdata/
#   DRY_RUN=1 bash benchmarks/gpu_session.sh       # print the steps without running them
#   bash benchmarks/gpu_session.sh prepare         # here, once: the wheel and the sequences it carries
#
# OUT (default /tmp/gpu-session-out; the device tool sets it) receives env.txt, log.txt, gpu_fps.txt and .json,
# eval_ALGO_DEVICE.json, profile.txt and cpu_profile.txt; DEVDATA (default .devdata) is the folder of CDnet-layout
# sequences.
#
# Steps (positional arguments choose some: env, fps, eval, profile, cpu; default all), each under its own time
# limit, the headline first so that a limit loses the least:
#   env      the machine, the packages; olkn's and norma's CPU kernels compiled in two processes at once
#            (numba's cache starts empty there: a few minutes in one process) while the GPU is checked;
#   fps      benchmarks/gpu_fps.py: agreement check, fps of both engines and KNN at 1920x1080 and 3840x2160;
#   eval     bgsub eval of olkn and norma on .devdata/ (mean F against the CPU engine's on the same sequences);
#   profile  benchmarks/bgsub_profile.py --device cuda: where a GPU frame's time goes;
#   cpu      benchmarks/bgsub_profile.py on the CPU engine with every core: the stages' shares on many cores.
set -u
OUT=${OUT:-/tmp/gpu-session-out}
DEVICE=${DEVICE:-cuda}
DRY_RUN=${DRY_RUN:-0}
DEVDATA=${DEVDATA:-.devdata}
STEPS=${*:-env fps eval profile cpu}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd) || exit 2
REPO=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO" || exit 2
export PYTHONUNBUFFERED=1 NUMBA_CACHE_DIR=${NUMBA_CACHE_DIR:-/tmp/olk-numba-cache}
LOG=$OUT/log.txt
export PYTHONPATH=$REPO
if [ "$STEPS" != prepare ] && [ "$DEVICE" = cuda ] && [ "$DRY_RUN" != 1 ] && ls .whl/*.whl >/dev/null 2>&1; then
    if python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
        .whl/*.whl >>"$LOG" 2>&1; then
        export PYTHONPATH=/tmp/site:$REPO
    else
        echo "== the carried wheels did not install (log.txt): the image's own packages run" | tee -a "$LOG"
    fi
fi

step() {  # step NAME SECONDS STDOUT_FILE COMMAND...: run COMMAND under a limit, its stderr into the log
    local name=$1 limit=$2 out=$3
    shift 3
    echo "== $name (limit ${limit}s): $*" | tee -a "$LOG"
    if [ "$DRY_RUN" = 1 ]; then
        return 0
    fi
    local t0=$SECONDS
    timeout "$limit" "$@" >"$out" 2>>"$LOG"
    local rc=$?
    echo "== $name: exit $rc after $((SECONDS - t0))s" | tee -a "$LOG"
    return 0
}

# The dev sequences that travel with the tree (the device tool carries 64 MiB in all: the tree, the numpy wheel
# and these 12 of the 16, 27 MB; the CDnet highway and three SBI sequences would not fit).
DEV_SEQUENCES="ucsd/birds ucsd/boats ucsd/chopper ucsd/flock ucsd/freeway ucsd/ocean ucsd/peds ucsd/traffic
ucsd/zodiac sbi/Foliage sbi/IBMtest2 sbi/Snellen"

for s in $STEPS; do
    case $s in
    prepare)  # here, once, with the network and ../shared/data: what the GPU machine's run carries
        echo "== prepare: .whl/ (numpy 2.4.6 for Python 3.12), .devdata/:" $DEV_SEQUENCES
        [ "$DRY_RUN" = 1 ] && continue
        mkdir -p .git/info
        for d in /.whl/ /.devdata/; do
            grep -qxF "$d" .git/info/exclude 2>/dev/null || echo "$d" >>.git/info/exclude
        done
        python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
            --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
            -d .whl numpy==2.4.6 || exit 2
        data=${SHARED_DATA:-../shared/data}/bgs
        mkdir -p .devdata
        for q in $DEV_SEQUENCES; do
            [ -d "$data/$q" ] || { echo "missing $data/$q" >&2; exit 2; }
            [ -d ".devdata/${q#*/}" ] || cp -r "$data/$q" .devdata/
        done
        du -sh .whl .devdata
        ;;
    env)
        [ "$DRY_RUN" = 1 ] || {
            date -u; nproc; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1
            python3 -c "import sys, numpy, numba, cv2; print(sys.version); print('numpy', numpy.__version__, \
'numba', numba.__version__, 'opencv', cv2.__version__)"
        } >"$OUT/env.txt" 2>&1
        step warm-olkn 120 "$OUT/warm_olkn.txt" python3 -c "from bgsub.warmup import warm_up; print(warm_up('olkn'))" &
        step warm-norma 120 "$OUT/warm_norma.txt" python3 -c "from bgsub.warmup import warm_up; print(warm_up('norma'))" &
        step gpu-check 100 "$OUT/gpu_check.txt" python3 -c "from bgsub.models._cuda_engine import cuda_runtime; \
import numba.cuda as c; cuda_runtime(); c.detect()"
        wait
        if [ "$DRY_RUN" != 1 ]; then
            cat "$OUT/gpu_check.txt" "$OUT"/warm_*.txt >>"$OUT/env.txt" 2>/dev/null
            rm -f "$OUT/gpu_check.txt" "$OUT"/warm_*.txt
        fi
        ;;
    fps)
        step gpu_fps 200 "$OUT/gpu_fps.txt" python3 benchmarks/gpu_fps.py --json "$OUT/gpu_fps.json"
        ;;
    eval)
        if [ -d "$DEVDATA" ] || [ "$DRY_RUN" = 1 ]; then
            for algo in olkn norma; do
                step "eval $algo" 80 "$OUT/eval_${algo}_$DEVICE.json" \
                    python3 -m bgsub eval "$DEVDATA" --algo "$algo" --device "$DEVICE" --json --quiet
            done
        else
            echo "== eval: no $DEVDATA/ (carry it: docs/gpu.md)" | tee -a "$LOG"
        fi
        ;;
    profile)
        step profile 60 "$OUT/profile.txt" python3 benchmarks/bgsub_profile.py --device cuda --threads "$(nproc)" \
            --size 1920x1080 --size 3840x2160 --frames 60 --warmup 10
        ;;
    cpu)  # the CPU engine's stages on every core of that machine (the speed issue's many-core figures)
        step cpu-profile 50 "$OUT/cpu_profile.txt" python3 benchmarks/bgsub_profile.py --device cpu \
            --threads "$(nproc)" --size 1920x1080 --size 3840x2160 --frames 20 --warmup 55
        ;;
    *)
        echo "unknown step $s (prepare, env, fps, eval, profile, cpu)" >&2
        exit 2
        ;;
    esac
done

# the headline figures: each eval's mean F
[ "$DRY_RUN" = 1 ] || python3 - "$OUT" <<'PY'
import json, pathlib, sys
for path in sorted(pathlib.Path(sys.argv[1]).glob("eval_*.json")):
    try:
        report = json.loads(path.read_text())
        print(f"{path.stem}: mean F {report['mean']['F']:.4f} over {len(report['sequences'])} sequences"
              f"{', failed: ' + ', '.join(f['name'] for f in report['failed']) if report['failed'] else ''}")
    except (ValueError, KeyError, TypeError) as exc:
        print(f"{path.stem}: no result ({type(exc).__name__}; see log.txt)")
PY
