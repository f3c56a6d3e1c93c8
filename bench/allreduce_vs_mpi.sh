#!/usr/bin/env bash
# allreduce_vs_mpi.sh - compare pscomm's examples/allreduce with MPI_Allreduce
# (bench/mpi_allreduce.c) at the same sizes, rank counts and provider:
# Open MPI over the same libfabric provider (pml cm + mtl ofi), Open MPI
# over its own transports (pml ob1 + btl self,vader for shm, self,tcp for
# tcp), and MPICH when installed.  Runs alternate between the stacks; the
# summary shows medians and pscomm/MPI ratios.  See bench/README.md.
#
# usage: bench/allreduce_vs_mpi.sh [options] [PSCOMM_BUILD_DIR] [-- ARGS...]
#   -n "RANKS"      rank counts, e.g. -n 4 or -n "2 4 8" (default 4)
#   -p "PROVIDERS"  libfabric providers (default "tcp shm")
#   -m MIN, -M MAX  sizes in bytes, doubling (default 4096 .. 67108864)
#   -t DTYPE        data type (default float32; MPI has no float16/bfloat16)
#   -o OP           sum prod min max (default sum)
#   -i ITERS        timed calls per size (default: the programs' own rule)
#   -r RUNS         runs of each stack, alternating (default 3)
#   -c              check every result as well (both programs' -c)
#   --quick         smoke run: -M 256K -i 10 -r 1 unless given
#   ARGS            appended to the pscomm command only (e.g. -- -a ring)
#   PSCOMM_BUILD_DIR  has examples/allreduce and tools/ps_comm_run
#                     (default: $PSCOMM_BUILD, else .)
#
# environment:
#   TABLE_SIZES="4096 65536 1048576 16777216 67108864"  sizes in the summary
#   OUTDIR=DIR         keep raw CSV/logs there (default: a temp dir)
#   MPI_BIND=none      mpirun --bind-to value
#   RUN_TIMEOUT=900    seconds before a single run is killed
#   MPICC, MPIRUN      Open MPI's compiler and launcher
#                      (default mpicc.openmpi/mpirun.openmpi, else mpicc/mpirun)
#   MPICH_MPICC, MPICH_MPIEXEC   MPICH's (default mpicc.mpich, mpiexec.mpich)
#   CC                 compiler for the shm shim (gcc)
#   MPI_ALLREDUCE      use this prebuilt Open MPI binary instead
set -u -o pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/mpi_common.sh"

usage() { sed -n '2,/^set -u/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; }

build=${PSCOMM_BUILD:-.}
NRANKS=${NRANKS:-4}
PROVIDERS=${PROVIDERS:-"tcp shm"}
MIN=4096 MAX="" DTYPE=float32 OP=sum ITERS="" RUNS=${RUNS:-} CHECK=0 QUICK=0
extra=()
while [[ $# -gt 0 ]]; do
    case $1 in
    -n) NRANKS=$2; shift 2 ;;
    -p) PROVIDERS=$2; shift 2 ;;
    -m) MIN=$2; shift 2 ;;
    -M) MAX=$2; shift 2 ;;
    -t) DTYPE=$2; shift 2 ;;
    -o) OP=$2; shift 2 ;;
    -i) ITERS=$2; shift 2 ;;
    -r) RUNS=$2; shift 2 ;;
    -c) CHECK=1; shift ;;
    --quick) QUICK=1; shift ;;
    -h|--help) usage; exit 0 ;;
    --) shift; extra=("$@"); break ;;
    -*) echo "allreduce_vs_mpi: unknown option $1" >&2; usage >&2; exit 2 ;;
    *) build=$1; shift ;;
    esac
done
if [[ $QUICK == 1 ]]; then
    [[ -z $MAX ]] && MAX=262144
    [[ -z $ITERS ]] && ITERS=10
    [[ -z $RUNS ]] && RUNS=1
fi
RUNS=${RUNS:-3}
MAX=${MAX:-67108864}
to_bytes() { # 4K, 1M, 1G or plain bytes
    local v=${1%[kKmMgG]} m=1
    case $1 in *[kK]) m=1024 ;; *[mM]) m=1048576 ;; *[gG]) m=1073741824 ;; esac
    [[ $v =~ ^[0-9]+$ ]] || { echo "allreduce_vs_mpi: bad size '$1'" >&2; exit 2; }
    echo $((v * m))
}
MIN=$(to_bytes "$MIN") || exit 2
MAX=$(to_bytes "$MAX") || exit 2
build=$(cd "$build" 2>/dev/null && pwd || echo "$build")
TABLE_SIZES=${TABLE_SIZES:-"4096 65536 1048576 16777216 67108864"}
MPI_BIND=${MPI_BIND:-none}
RUN_TIMEOUT=${RUN_TIMEOUT:-900}
CC=${CC:-gcc}
pick() { command -v "$1" >/dev/null && echo "$1" || echo "$2"; }
MPICC=${MPICC:-$(pick mpicc.openmpi mpicc)}
MPIRUN=${MPIRUN:-$(pick mpirun.openmpi mpirun)}
MPICH_MPICC=${MPICH_MPICC:-mpicc.mpich}
MPICH_MPIEXEC=${MPICH_MPIEXEC:-mpiexec.mpich}

# The same arguments for every stack, so the rows line up.
common=(--csv -m "$MIN" -M "$MAX" -t "$DTYPE" -o "$OP")
[[ -n $ITERS ]] && common+=(-i "$ITERS")
[[ $CHECK == 1 ]] && common+=(-c)

work=$(mktemp -d /tmp/allreduce_vs_mpi.XXXXXX)
OUTDIR=${OUTDIR:-$work/out}
mkdir -p "$OUTDIR"
t_start=$(date +%s)
failed=0

say "== allreduce_vs_mpi: $(date -u '+%Y-%m-%d %H:%M:%S UTC') on $(hostname), $(nproc) cores"
say "   pscomm build dir: $build"
say "   providers: $PROVIDERS   ranks: $NRANKS   runs: $RUNS   quick: $QUICK"
say "   arguments: ${common[*]}   (pscomm only: ${extra[*]:-none})"
say "   raw results: $OUTDIR"
command -v "$MPIRUN" >/dev/null && say "   $("$MPIRUN" --version 2>/dev/null | head -1)"
command -v fi_info >/dev/null && say "   libfabric: $(fi_info --version 2>/dev/null | grep -m1 libfabric)"

# ---------------------------------------------------------------- peers ----
ompi_bin=${MPI_ALLREDUCE:-}
mpich_bin=""
shim=""

build_peer() { # $1 compiler, $2 output
    compile_peer "$1" "$2" "$here/mpi_allreduce.c"
}

mpi_has_type=1
if [[ $DTYPE == float16 || $DTYPE == bfloat16 ]]; then
    say "!! MPI has no $DTYPE type: pscomm runs alone"
    mpi_has_type=0 ompi_bin=""
elif [[ -z $ompi_bin ]]; then
    if command -v "$MPICC" >/dev/null && command -v "$MPIRUN" >/dev/null; then
        say "-- building mpi_allreduce (Open MPI)"
        if build_peer "$MPICC" "$work/mpi_allreduce"; then
            ompi_bin=$work/mpi_allreduce
        else
            say "!! mpi_allreduce failed to build: skipping the Open MPI references"
        fi
    else
        say "!! $MPICC or $MPIRUN not found: skipping the Open MPI references"
    fi
fi
if [[ $mpi_has_type == 0 ]]; then
    :
elif command -v "$MPICH_MPICC" >/dev/null && command -v "$MPICH_MPIEXEC" >/dev/null; then
    say "-- building mpi_allreduce (MPICH)"
    if build_peer "$MPICH_MPICC" "$work/mpich_allreduce"; then
        mpich_bin=$work/mpich_allreduce
    else
        say "!! MPICH build of mpi_allreduce failed: skipping MPICH"
    fi
else
    say "-- MPICH not installed ($MPICH_MPICC/$MPICH_MPIEXEC): no MPICH column"
fi

# build_shim (bench/mpi_common.sh) makes bench/ofi_caps_shim.c, which lets
# Open MPI's OFI MTL select libfabric's shm provider.

find_pscomm allreduce

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# --mca on the command line overrides Debian's openmpi-mca-params.conf
# ("mtl = ^ofi", "pml = ^ucx"); mtl_ofi_provider_include replaces the default
# exclude list (shm,sockets,tcp,udp,rstream), and must not be combined with
# mtl_ofi_provider_exclude.
mpirun_base() { # $1 ranks
    echo "$MPIRUN" --allow-run-as-root --oversubscribe --bind-to "$MPI_BIND" -n "$1"
}

# fill the global array `cmd` for stack $1, provider $2, ranks $3
make_cmd() {
    local stack=$1 p=$2 n=$3
    local -a base
    read -r -a base <<<"$(mpirun_base "$n")"
    cmd=()
    case $stack in
    pscomm)
        cmd=("$ps_run" -n "$n" --provider "$p" -- "$ps_bin" "${common[@]}" "${extra[@]}") ;;
    ompi_ofi)
        cmd=("${base[@]}" --mca pml cm --mca mtl ofi
             --mca mtl_ofi_provider_include "$p" -x FI_PROVIDER="$p")
        [[ $p == shm ]] && cmd+=(-x LD_PRELOAD="$shim")
        cmd+=("$ompi_bin" "${common[@]}") ;;
    ompi_native)
        local btl=self,tcp
        [[ $p == shm ]] && btl=self,vader
        cmd=("${base[@]}" --mca pml ob1 --mca btl "$btl" "$ompi_bin" "${common[@]}") ;;
    mpich)
        cmd=("$MPICH_MPIEXEC" -n "$n" -genv FI_PROVIDER "$p" "$mpich_bin" "${common[@]}") ;;
    esac
}

csv_row='^[0-9]+,[0-9]+,[a-z0-9]+,[a-z]+,[a-z]+,[0-9.eE+-]+,[0-9.eE+-]+,[0-9.eE+-]+,[0-9]+$'

# one run: stdout -> $OUTDIR/<prov>/n<ranks>/<stack>.<run>.csv, stderr -> .err
run_one() {
    local stack=$1 p=$2 n=$3 r=$4 out=$OUTDIR/$2/n$3/$1.$4
    make_cmd "$stack" "$p" "$n"
    local t0=$SECONDS rc=0 rows errs
    timeout "$RUN_TIMEOUT" "${cmd[@]}" >"$out.csv" 2>"$out.err" || rc=$?
    rows=$(grep -cE "$csv_row" "$out.csv")
    errs=$(grep -E "$csv_row" "$out.csv" | awk -F, '{s += $9} END {print s + 0}')
    if [[ $rc -ne 0 || $rows -eq 0 ]]; then
        failed=$((failed + 1))
        report_failed "run $r $stack" "$rc" "$rows" "$out"
    else
        local note=""
        [[ $CHECK == 1 ]] && note=", $errs wrong elements"
        say "   run $r $stack: $rows sizes in $((SECONDS - t0)) s$note"
    fi
}

# prove that Open MPI really runs pml cm + mtl ofi on provider $1
verify_ofi() {
    local -a base
    read -r -a base <<<"$(mpirun_base 2)"
    probe_ofi "$1" '^4096,1024,' "${base[@]}" -- "$ompi_bin" --csv -m 4096 -M 4096 -i 2
}

# ----------------------------------------------------------------- runs ----
declare -A enabled
for p in $PROVIDERS; do
    mkdir -p "$OUTDIR/$p"
    say ""
    say "== provider $p"
    stacks=()
    [[ $have_pscomm == 1 ]] && stacks+=(pscomm)
    [[ -n $ompi_bin ]] && add_ompi_stacks "$p"
    [[ -n $mpich_bin ]] && stacks+=(mpich)
    enabled[$p]="${stacks[*]}"
    for n in $NRANKS; do
        mkdir -p "$OUTDIR/$p/n$n"
        say "-- commands (provider $p, $n ranks):"
        for s in "${stacks[@]}"; do
            make_cmd "$s" "$p" "$n"
            show_cmd "${cmd[@]}"
        done
        for ((r = 1; r <= RUNS; r++)); do
            for s in "${stacks[@]}"; do
                run_one "$s" "$p" "$n" "$r"
            done
        done
    done
done

# -------------------------------------------------------------- summary ----
# median over runs of CSV column $5 (6 = time_us, 8 = busbw) at size $4
median() {
    local p=$1 n=$2 s=$3 size=$4 col=$5 f
    for f in "$OUTDIR/$p/n$n/$s".*.csv; do
        [[ -e $f ]] || continue
        grep -E "$csv_row" "$f" | awk -F, -v z="$size" -v c="$col" '$1 == z {print $c}'
    done | median_of %.4f
}

label() {
    case $1 in
    pscomm) echo "pscomm" ;; ompi_ofi) echo "OMPI-ofi" ;; mpich) echo "MPICH" ;;
    ompi_native) [[ $2 == shm ]] && echo "OMPI-vader" || echo "OMPI-tcp" ;;
    esac
}

say ""
say "== summary: $DTYPE $OP, medians over $RUNS run(s); ratios are pscomm / reference"
say "   time per allreduce: lower is better (ratio <= 1 good)"
say "   busbw = algbw * 2(n-1)/n: higher is better (ratio >= 1 good)"
refs=()   # the reference columns: the MPI stacks that were built
[[ -n $ompi_bin ]] && refs+=(ompi_ofi ompi_native)
[[ -n $mpich_bin ]] && refs+=(mpich)
for p in $PROVIDERS; do
    for n in $NRANKS; do
        for what in time busbw; do
            col=6 unit="us"
            [[ $what == busbw ]] && col=8 unit="GB/s"
            say ""
            say "-- provider $p, $n ranks: $what ($unit)"
            hdr=$(printf '%-10s %12s' size pscomm)
            for s in "${refs[@]}"; do hdr+=$(printf ' %12s' "$(label "$s" "$p")"); done
            for s in "${refs[@]}"; do hdr+=$(printf ' %12s' "/$(label "$s" "$p")"); done
            say "$hdr"
            for size in $TABLE_SIZES; do
                (( size < MIN || size > MAX )) && continue
                declare -A m=()
                for s in pscomm "${refs[@]}"; do
                    m[$s]="-"
                    [[ " ${enabled[$p]} " == *" $s "* ]] &&
                        m[$s]=$(median "$p" "$n" "$s" "$size" "$col")
                done
                line=$(printf '%-10s %12s' "$size" "${m[pscomm]}")
                for s in "${refs[@]}"; do line+=$(printf ' %12s' "${m[$s]}"); done
                for s in "${refs[@]}"; do
                    line+=$(printf ' %12s' "$(ratio "${m[pscomm]}" "${m[$s]}")")
                done
                say "$line"
                unset m
            done
        done
    done
done
say ""
say "== done in $(( $(date +%s) - t_start )) s; $failed failed run(s); raw CSV and logs in $OUTDIR"
[[ $failed -eq 0 ]]
