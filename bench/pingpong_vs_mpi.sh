#!/usr/bin/env bash
# pingpong_vs_mpi.sh - compare pscomm's examples/pingpong with Open MPI
# (over the same libfabric provider, and over its own transports) and with
# ZeroMQ/TCP (what ps-lite uses today).  See bench/README.md.
#
# usage: bench/pingpong_vs_mpi.sh [PSCOMM_BUILD_DIR] [PINGPONG ARGS...]
#   PSCOMM_BUILD_DIR   dir with examples/pingpong and tools/ps_comm_run
#                      (default: $PSCOMM_BUILD, else .)
#   PINGPONG ARGS      passed to every benchmark, e.g. -m 8 -M 4194304 -i 500
#
# environment:
#   PROVIDERS="tcp shm"  libfabric providers to test
#   RUNS=3               rounds per provider (stacks alternate inside a round)
#   QUICK=1              few iterations (-i 100 -w 10) for a fast smoke run
#   TABLE_SIZES="8 4096 1048576 4194304"   sizes shown in the summary
#   OUTDIR=DIR           keep raw CSV/logs there (default: a temp dir)
#   MPI_BIND=none        mpirun --bind-to value
#   RUN_TIMEOUT=180      seconds before a single benchmark run is killed
#   MPICC, CC            compilers for the reference peers (mpicc, gcc)
#   MPI_PINGPONG, ZMQ_PINGPONG   use these prebuilt binaries instead
set -u -o pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/mpi_common.sh"

build=${PSCOMM_BUILD:-.}
if [[ $# -gt 0 && $1 != -* ]]; then
    build=$1
    shift
fi
build=$(cd "$build" 2>/dev/null && pwd || echo "$build")
user_args=("$@")

PROVIDERS=${PROVIDERS:-"tcp shm"}
QUICK=${QUICK:-0}
RUNS=${RUNS:-3}
TABLE_SIZES=${TABLE_SIZES:-"8 4096 1048576 4194304"}
MPI_BIND=${MPI_BIND:-none}
RUN_TIMEOUT=${RUN_TIMEOUT:-180}
MPICC=${MPICC:-mpicc}
CC=${CC:-gcc}

bench_args=(--csv)
[[ $QUICK == 1 ]] && bench_args+=(-i 100 -w 10)
bench_args+=("${user_args[@]}")   # user arguments come last and win

work=$(mktemp -d /tmp/pingpong_vs_mpi.XXXXXX)
OUTDIR=${OUTDIR:-$work/out}
mkdir -p "$OUTDIR"
t_start=$(date +%s)

say "== pingpong_vs_mpi: $(date -u '+%Y-%m-%d %H:%M:%S UTC') on $(hostname), $(nproc) cores"
say "   pscomm build dir: $build"
say "   providers: $PROVIDERS   rounds: $RUNS   quick: $QUICK   args: ${bench_args[*]}"
say "   raw results: $OUTDIR"
command -v mpirun >/dev/null && say "   $(mpirun --version 2>/dev/null | head -1)"
command -v fi_info >/dev/null && say "   libfabric: $(fi_info --version 2>/dev/null | grep -m1 libfabric)"

# ---------------------------------------------------------------- peers ----
mpi_bin=${MPI_PINGPONG:-}
zmq_bin=${ZMQ_PINGPONG:-}
shim=""

if [[ -z $mpi_bin && -x $build/bench/mpi_pingpong ]]; then mpi_bin=$build/bench/mpi_pingpong; fi
if [[ -z $mpi_bin ]]; then
    if command -v "$MPICC" >/dev/null && command -v mpirun >/dev/null; then
        say "-- building mpi_pingpong"
        if compile_peer "$MPICC" "$work/mpi_pingpong" "$here/mpi_pingpong.c"; then
            mpi_bin=$work/mpi_pingpong
        else
            say "!! mpi_pingpong failed to build: skipping the Open MPI references"
        fi
    else
        say "!! $MPICC or mpirun not found: skipping the Open MPI references"
    fi
fi

if [[ -z $zmq_bin && -x $build/bench/zmq_pingpong ]]; then zmq_bin=$build/bench/zmq_pingpong; fi
if [[ -z $zmq_bin ]]; then
    if command -v "$CC" >/dev/null; then
        say "-- building zmq_pingpong"
        if compile_peer "$CC" "$work/zmq_pingpong" "$here/zmq_pingpong.c" -lzmq; then
            zmq_bin=$work/zmq_pingpong
        else
            say "!! zmq_pingpong failed to build (libzmq3-dev missing?): skipping ZeroMQ"
        fi
    else
        say "!! $CC not found: skipping ZeroMQ"
    fi
fi

# build_shim (bench/mpi_common.sh) makes bench/ofi_caps_shim.c, which lets
# Open MPI's OFI MTL select libfabric's shm provider.

find_pscomm pingpong

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# --allow-run-as-root is also passed explicitly; --mca on the command line
# overrides Debian's /etc/openmpi/openmpi-mca-params.conf ("mtl = ^ofi",
# "pml = ^ucx").  Setting mtl_ofi_provider_include replaces the default
# exclude list (shm,sockets,tcp,udp,rstream); setting the exclude list as well
# is rejected by Open MPI 4.1 as "mutually exclusive", so we do not.
mpirun_base=(mpirun --allow-run-as-root --oversubscribe --bind-to "$MPI_BIND" -n 2)

# command builders: fill the global array `cmd` for stack $1, provider $2
make_cmd() {
    local stack=$1 p=$2
    cmd=()
    case $stack in
    pscomm)
        cmd=(env FI_PROVIDER="$p" "$ps_run" -n 2 --provider "$p" -- "$ps_bin" "${bench_args[@]}") ;;
    ompi_ofi)
        cmd=("${mpirun_base[@]}" --mca pml cm --mca mtl ofi
             --mca mtl_ofi_provider_include "$p" -x FI_PROVIDER="$p")
        [[ $p == shm ]] && cmd+=(-x LD_PRELOAD="$shim")
        cmd+=("$mpi_bin" "${bench_args[@]}") ;;
    ompi_native)
        local btl=self,tcp
        [[ $p == shm ]] && btl=self,vader
        cmd=("${mpirun_base[@]}" --mca pml ob1 --mca btl "$btl" "$mpi_bin" "${bench_args[@]}") ;;
    zmq)
        cmd=("$zmq_bin" "${bench_args[@]}") ;;
    esac
}

# one run: stdout -> $OUTDIR/<prov>/<stack>.<round>.csv, stderr -> .err
run_one() {
    local stack=$1 p=$2 r=$3 out=$OUTDIR/$2/$1.$3
    make_cmd "$stack" "$p"
    local t0=$SECONDS rc=0
    timeout "$RUN_TIMEOUT" "${cmd[@]}" >"$out.csv" 2>"$out.err" || rc=$?
    local rows
    rows=$(grep -cE '^[0-9]+,[0-9.eE+-]+,[0-9.eE+-]+$' "$out.csv")
    if [[ $rc -ne 0 || $rows -eq 0 ]]; then
        report_failed "round $r $stack" "$rc" "$rows" "$out"
    else
        say "   round $r $stack: $rows sizes in $((SECONDS - t0)) s"
    fi
}

# prove that Open MPI really ran pml cm + mtl ofi on provider $1
verify_ofi() {
    probe_ofi "$1" '^8,[0-9.]+,[0-9.]+$' "${mpirun_base[@]}" -- "$mpi_bin" --csv -m 8 -M 8 -i 10 -w 2
}

# ----------------------------------------------------------------- runs ----
declare -A enabled
for p in $PROVIDERS; do
    mkdir -p "$OUTDIR/$p"
    say ""
    say "== provider $p"
    stacks=()
    [[ $have_pscomm == 1 ]] && stacks+=(pscomm)
    [[ -n $mpi_bin ]] && add_ompi_stacks "$p"
    [[ -n $zmq_bin ]] && stacks+=(zmq)
    enabled[$p]="${stacks[*]}"
    say "-- commands (provider $p):"
    for s in "${stacks[@]}"; do
        make_cmd "$s" "$p"
        show_cmd "${cmd[@]}"
    done
    for ((r = 1; r <= RUNS; r++)); do
        for s in "${stacks[@]}"; do
            run_one "$s" "$p" "$r"
        done
    done
done

# -------------------------------------------------------------- summary ----
# median over rounds of column $4 (2 = latency, 3 = bandwidth) at size $3
median() {
    local p=$1 s=$2 size=$3 col=$4 f
    for f in "$OUTDIR/$p/$s".*.csv; do
        [[ -e $f ]] || continue
        awk -F, -v n="$size" -v c="$col" '$1 == n && NF == 3 {print $c}' "$f"
    done | median_of %.3f
}

label() {
    case $1 in
    pscomm) echo "pscomm" ;; ompi_ofi) echo "OMPI-ofi" ;;
    ompi_native) [[ $2 == shm ]] && echo "OMPI-vader" || echo "OMPI-tcp" ;;
    zmq) echo "ZeroMQ" ;;
    esac
}

say ""
say "== summary: medians over $RUNS round(s); ratios are pscomm / reference"
say "   latency: lower is better (ratio <= 1 good); bandwidth: higher is better (ratio >= 1 good)"
all=(pscomm ompi_ofi ompi_native zmq)
for p in $PROVIDERS; do
    for what in latency bandwidth; do
        col=2 unit="us"
        [[ $what == bandwidth ]] && col=3 unit="MB/s"
        say ""
        say "-- provider $p: $what ($unit)"
        hdr=$(printf '%-10s' size)
        for s in "${all[@]}"; do hdr+=$(printf ' %12s' "$(label "$s" "$p")"); done
        hdr+=$(printf ' %14s %14s' "pscomm/ofi" "pscomm/zmq")
        say "$hdr"
        for size in $TABLE_SIZES; do
            declare -A m=()
            line=$(printf '%-10s' "$size")
            for s in "${all[@]}"; do
                if [[ " ${enabled[$p]} " == *" $s "* ]]; then
                    m[$s]=$(median "$p" "$s" "$size" "$col")
                else
                    m[$s]="-"
                fi
                line+=$(printf ' %12s' "${m[$s]}")
            done
            line+=$(printf ' %14s %14s' "$(ratio "${m[pscomm]}" "${m[ompi_ofi]}")" \
                                         "$(ratio "${m[pscomm]}" "${m[zmq]}")")
            say "$line"
            unset m
        done
    done
done
say ""
say "== done in $(( $(date +%s) - t_start )) s; raw CSV and logs in $OUTDIR"
