#!/usr/bin/env bash
# contention.sh - shared-memory latency and allreduce on a host whose cores
# are busy, as on a training host: pscomm on shm against Open MPI's own
# shared memory (vader) and Open MPI over the same libfabric provider.
# See bench/README.md, "bench/contention.sh".
#
# usage: bench/contention.sh [-r ROUNDS] [-l "LOADS"] [-o OUTDIR] [BUILD_DIR]
#   -r ROUNDS   rounds per load (default 7); each round runs every system
#               once, the order rotating from round to round
#   -l LOADS    loads, each N (N busy-loop processes per core) or ccN (N
#               compile loops per core: gcc -O2 of bench/memcpy_bw.c over
#               and over, short processes the scheduler keeps moving, as
#               on a host that builds while it trains); default "0 1 2"
#   -o OUTDIR   raw CSV, logs and summary.md (default: a temp dir)
#   BUILD_DIR   pscomm build with examples/ and tools/ps_comm_run
#               (default: $PSCOMM_BUILD, else .)
#
# Rows: pingpong 8 B and 4 KiB (half round trip, us) and allreduce of
# 64 KiB of float32 on 2 ranks (us per call). Every figure is the median
# of the rounds with its min and max, and each ratio is pscomm's median
# over the peer's (below 1: pscomm faster). Nothing is pinned.
set -u -o pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/mpi_common.sh"

ROUNDS=7
LOADS="0 1 2"
OUTDIR=
while getopts "r:l:o:" opt; do
    case $opt in
    r) ROUNDS=$OPTARG ;;
    l) LOADS=$OPTARG ;;
    o) OUTDIR=$OPTARG ;;
    *) sed -n '2,20p' "$0"; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
build=$(cd "${1:-${PSCOMM_BUILD:-.}}" && pwd) || exit 2
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || { say "-r wants a positive count"; exit 2; }
for l in $LOADS; do
    [[ $l =~ ^(cc)?[0-9]+$ ]] || { say "-l wants N (busy loops per core) or ccN (compile loops per core)"; exit 2; }
done

RUN_TIMEOUT=${RUN_TIMEOUT:-300}
CC=${CC:-gcc}
pick() { command -v "$1" >/dev/null && echo "$1" || echo "$2"; }
MPICC=${MPICC:-$(pick mpicc.openmpi mpicc)}
MPIRUN=${MPIRUN:-$(pick mpirun.openmpi mpirun)}
work=$(mktemp -d /tmp/contention.XXXXXX)
OUTDIR=${OUTDIR:-$(mktemp -d /tmp/contention-out.XXXXXX)}
mkdir -p "$OUTDIR/raw"
cores=$(nproc)
hogs=()
stop_hogs() {
    [[ ${#hogs[@]} -gt 0 ]] && kill "${hogs[@]}" 2>/dev/null
    [[ ${#hogs[@]} -gt 0 ]] && wait "${hogs[@]}" 2>/dev/null
    hogs=()
}
trap 'stop_hogs; rm -rf "$work"' EXIT
trap 'exit 130' INT TERM

say "== contention: $(date -u '+%Y-%m-%d %H:%M:%S UTC') on $(hostname), $cores cores"
say "   rounds $ROUNDS, busy loops per core: $LOADS; pscomm build $build"
say "   $($MPIRUN --version 2>/dev/null | head -1)"
say "   $(fi_info --version 2>/dev/null | grep -m1 libfabric)"

find_pscomm pingpong
[[ $have_pscomm == 1 ]] || exit 1
ps_ar=$build/examples/allreduce
shim=""
systems=(pscomm)
if command -v "$MPICC" >/dev/null && command -v "$MPIRUN" >/dev/null &&
   compile_peer "$MPICC" "$work/mpi_pingpong" "$here/mpi_pingpong.c" &&
   compile_peer "$MPICC" "$work/mpi_allreduce" "$here/mpi_allreduce.c"; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    mpirun_base=("$MPIRUN" --allow-run-as-root --oversubscribe --bind-to none -n 2)
    systems+=(ompi_vader)
    mkdir -p "$OUTDIR/shm"
    if build_shim && probe_ofi shm '^8,[0-9.]+,[0-9.]+$' "${mpirun_base[@]}" \
        -- "$work/mpi_pingpong" --csv -m 8 -M 8 -i 10 -w 2; then
        systems+=(ompi_ofi)
    fi
else
    say "!! Open MPI (mpicc, mpirun) missing: pscomm alone"
fi

pp_args=(--csv -m 8 -M 4096 -i 1000 -w 100)
ar_args=(--csv -m 64K -M 64K -i 200)

# fill `cmd` for system $1 and benchmark $2 (pingpong, allreduce)
make_cmd() {
    local prog args
    if [[ $2 == pingpong ]]; then args=("${pp_args[@]}"); else args=("${ar_args[@]}"); fi
    case $1 in
    pscomm)
        prog=$ps_bin
        [[ $2 == allreduce ]] && prog=$ps_ar
        cmd=(env FI_PROVIDER=shm "$ps_run" -n 2 --provider shm -- "$prog" "${args[@]}") ;;
    ompi_vader)
        cmd=("${mpirun_base[@]}" --mca pml ob1 --mca btl self,vader "$work/mpi_$2" "${args[@]}") ;;
    ompi_ofi)
        cmd=("${mpirun_base[@]}" --mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include shm
             -x FI_PROVIDER=shm -x LD_PRELOAD="$shim" "$work/mpi_$2" "${args[@]}") ;;
    esac
}

say "-- commands:"
for s in "${systems[@]}"; do
    for b in pingpong allreduce; do make_cmd "$s" "$b"; show_cmd "${cmd[@]}"; done
done
say "   busy loop: sh -c 'while :; do :; done' (load x $cores of them)"
say "   compile loop: sh -c 'while :; do $CC -O2 -c -o /dev/null $here/memcpy_bw.c; done' (ccN: N x $cores of them)"

# One sample: the pingpong rows (size,latency,bandwidth) or the allreduce
# row (size,...,time_us,...) go to raw/<load>/<system>.<bench>.<round>.csv.
run_one() {
    local s=$1 b=$2 load=$3 r=$4 out=$OUTDIR/raw/$3/$1.$2.$4 rc=0
    make_cmd "$s" "$b"
    timeout "$RUN_TIMEOUT" "${cmd[@]}" >"$out.csv" 2>"$out.err" || rc=$?
    if [[ $rc -ne 0 ]] || ! grep -qE '^[0-9]+,' "$out.csv"; then
        report_failed "load $load round $r $s $b" "$rc" 0 "$out"
        return 1
    fi
}

failed=0
for load in $LOADS; do
    mkdir -p "$OUTDIR/raw/$load"
    n=${load#cc}
    for ((i = 0; i < n * cores; i++)); do
        if [[ $load == cc* ]]; then
            # shellcheck disable=SC2016 # expanded by the loop's shell
            sh -c 'while :; do "$0" -O2 -c -o /dev/null "$1"; done' \
                "$CC" "$here/memcpy_bw.c" &
        else
            sh -c 'while :; do :; done' &
        fi
        hogs+=($!)
    done
    say "== load $load per core (${#hogs[@]} loops)"
    for ((r = 1; r <= ROUNDS; r++)); do
        n=${#systems[@]}
        for ((k = 0; k < n; k++)); do
            s=${systems[$(((k + r) % n))]}
            for b in pingpong allreduce; do
                run_one "$s" "$b" "$load" "$r" || failed=1
            done
        done
        say "   round $r done"
    done
    stop_hogs
done

# ---------------------------------------------------------------- summary
# samples of system $1, bench $2, load $3 at size $4: pingpong latency
# (column 2) or allreduce time (column 6)
samples() {
    local col=2 f
    [[ $2 == allreduce ]] && col=6
    for f in "$OUTDIR/raw/$3/$1.$2".*.csv; do
        [[ -e $f ]] || continue
        awk -F, -v z="$4" -v c="$col" '$1 == z {print $c}' "$f"
    done
}
cell() { # median (min-max)
    local v
    v=$(samples "$@" | sort -g)
    [[ -z $v ]] && { echo "-"; return; }
    printf '%s (%s-%s)' "$(median_of %.3f <<<"$v")" "$(head -1 <<<"$v")" "$(tail -1 <<<"$v")"
}
med() { samples "$@" | median_of %.3f; }

{
    echo "# Contention: shm latency and allreduce with busy cores"
    echo
    echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $cores cores, $ROUNDS rounds per load, unpinned."
    echo "Medians (min-max) in us; ratio = pscomm's median / the peer's."
    echo
    printf '| load per core | row |'
    for s in "${systems[@]}"; do printf ' %s |' "$s"; done
    for s in "${systems[@]:1}"; do printf ' pscomm/%s |' "$s"; done
    echo
    printf '|---|---|'
    for ((i = 1; i < 2 * ${#systems[@]}; i++)); do printf -- '---|'; done
    echo
    for load in $LOADS; do
        for row in "pingpong 8" "pingpong 4096" "allreduce 65536"; do
            set -- $row
            printf '| %s | %s %s B |' "$load" "$1" "$2"
            for s in "${systems[@]}"; do printf ' %s |' "$(cell "$s" "$1" "$load" "$2")"; done
            p=$(med pscomm "$1" "$load" "$2")
            for s in "${systems[@]:1}"; do
                printf ' %s |' "$(ratio "$p" "$(med "$s" "$1" "$load" "$2")")"
            done
            echo
        done
    done
} >"$OUTDIR/summary.md"
cat "$OUTDIR/summary.md"
say "== raw CSV and logs in $OUTDIR"
exit $failed
