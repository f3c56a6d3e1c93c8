# mpi_common.sh - helpers shared by the bench scripts that compare pscomm
# with MPI (bench/pingpong_vs_mpi.sh, bench/allreduce_vs_mpi.sh) and with
# an earlier build of itself (bench/compare_builds.sh). Sourced, not run. The caller sets work (a scratch dir), CC (a C compiler) and
# shim="" before build_shim, and RUN_TIMEOUT before report_failed.

mpi_common_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

say() { printf '%s\n' "$*"; }

show_cmd() { # print a command (with its env prefix) so it can be re-run
    local s="" a
    for a in "$@"; do
        if [[ $a =~ ^[A-Za-z0-9_./=,:+@%-]+$ ]]; then s+="$a "; else s+="$(printf '%q' "$a") "; fi
    done
    say "  \$ ${s% }"
}

# Compile bench peer $3 with compiler $1 into $2 (further link arguments
# follow), showing the command first so it can be re-run by hand.
compile_peer() {
    local cc=$1 out=$2 src=$3
    shift 3
    show_cmd "$cc" -O2 -Wall -Wextra -Werror -o "$out" "$src" "$@"
    "$cc" -O2 -Wall -Wextra -Werror -o "$out" "$src" "$@"
}

# Set ps_run and ps_bin (examples/$1) under the caller's $build, and
# have_pscomm to 1, or to 0 with a message when either is missing.
find_pscomm() {
    ps_run=$build/tools/ps_comm_run
    ps_bin=$build/examples/$1
    have_pscomm=1
    if [[ ! -x $ps_run || ! -x $ps_bin ]]; then
        have_pscomm=0
        say "!! pscomm skipped: need $ps_bin and $ps_run (build pscomm first)"
    fi
}

# Build bench/ofi_caps_shim.c (see its header: it lets Open MPI's OFI MTL
# select libfabric's shm provider) into $work once; sets `shim` to the
# library.  Returns 1 when it cannot be built.
build_shim() {
    [[ -n $shim ]] && return 0
    echo 'FABRIC_1.3 { global: fi_getinfo; local: *; };' >"$work/ofi_caps_shim.map"
    if "$CC" -O2 -Wall -Wextra -Werror -shared -fPIC \
         -Wl,--version-script="$work/ofi_caps_shim.map" \
         -o "$work/ofi_caps_shim.so" "$mpi_common_dir/ofi_caps_shim.c" -ldl -lfabric; then
        shim=$work/ofi_caps_shim.so
        say "-- built $shim (drops FI_LOCAL_COMM|FI_REMOTE_COMM from Open MPI's fi_getinfo hints; needed for shm)"
        return 0
    fi
    say "!! could not build the fi_getinfo shim (libfabric-dev missing?)"
    return 1
}

# Append the Open MPI stacks for provider $1 to the caller's array `stacks`:
# ompi_ofi when the caller's verify_ofi proves Open MPI runs over that
# provider (building the shim first for shm), and always ompi_native.
add_ompi_stacks() {
    local p=$1
    if [[ $p != shm ]] || build_shim; then
        verify_ofi "$p" && stacks+=(ompi_ofi)
    else
        say "!! OMPI-ofi skipped for shm (no shim)"
    fi
    stacks+=(ompi_native)
}

# probe_ofi P DATA_RE LAUNCHER... -- PROGRAM ARGS...: run PROGRAM once
# under LAUNCHER (mpirun and its base options) with pml cm, mtl ofi on
# provider P and verbose selection logs (plus the shim for shm), into
# $OUTDIR/P/verify_ofi.log, and judge the log with check_ofi_log, DATA_RE
# matching a line of the program's output.  Returns 0 when verified.
probe_ofi() {
    local p=$1 data_re=$2 log=$OUTDIR/$1/verify_ofi.log
    local -a v=()
    shift 2
    while [[ $# -gt 0 && $1 != -- ]]; do v+=("$1"); shift; done
    shift
    v+=(--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include "$p"
        -x FI_PROVIDER="$p" --mca pml_base_verbose 10 --mca mtl_base_verbose 100
        -x FI_LOG_LEVEL=info)
    [[ $p == shm ]] && v+=(-x LD_PRELOAD="$shim")
    v+=("$@")
    say "-- verifying Open MPI uses pml cm / mtl ofi / libfabric provider $p:"
    show_cmd "${v[@]}"
    timeout 120 "${v[@]}" >"$log" 2>&1
    check_ofi_log "$p" "$log" "$data_re"
}

# Judge a verbose Open MPI run logged in $2 (pml/mtl verbosity and
# FI_LOG_LEVEL=info) for provider $1: pml cm and mtl ofi were selected,
# the program printed a line matching $3, and provider $1 (or the rxm/rxd
# utility layer over it) logged AV/endpoint/fabric/CQ activity.  Prints
# the verdict; returns 0 when verified.
check_ofi_log() {
    local p=$1 log=$2 data_re=$3 ok=1 dom fab nprov
    grep -q 'select: component cm selected' "$log" || ok=0
    grep -q 'select: component ofi selected' "$log" || ok=0
    grep -qE "$data_re" "$log" || ok=0
    dom=$(grep -m1 -o 'mtl:ofi:provider: .*' "$log" | awk '{print $2}')
    fab=$(grep -m1 -o 'Opened fabric: .*' "$log" | sed 's/Opened fabric: //')
    # libfabric log lines read libfabric:PID:TS:<core prov>:<prov>:<subsys>:
    # and the core field is empty once endpoints are live.  FI_PROVIDER=tcp
    # only allows the RDM utility layer ofi_rxm on top of tcp.
    nprov=$(grep -cE "^libfabric:[0-9]+:[0-9]+::($p|ofi_rxm|ofi_rxd):(av|ep_ctrl|ep_data|fabric|cq):" "$log")
    if [[ $ok == 1 && $nprov -gt 0 ]]; then
        say "   OK: pml cm + mtl ofi selected; FI_PROVIDER=$p; OFI domain '$dom', fabric '$fab'; $nprov libfabric log lines from provider '$p'"
        grep -m2 -E 'mtl:ofi:provider:|Opened fabric:' "$log" | sed 's/^/     | /'
        return 0
    fi
    say "   NOT VERIFIED (cm/ofi selected=$ok, provider lines=$nprov): OMPI-ofi skipped for $p; log: $log"
    tail -n 8 "$log" | sed 's/^/     | /'
    return 1
}

# Say that run $1 failed: exit status $2, $3 complete CSV rows, output
# files $4.csv / $4.err (the last lines of .err are shown).
report_failed() {
    local what=$1 rc=$2 rows=$3 out=$4 kept="no data"
    [[ $rows -gt 0 ]] && kept="its $rows complete rows are kept"
    [[ $rc -eq 124 ]] && kept+=", killed after RUN_TIMEOUT=$RUN_TIMEOUT s"
    say "   $what: FAILED (rc=$rc; $kept) - see $out.err"
    tail -n 5 "$out.err" | sed 's/^/     | /'
}

# The median of the numbers on stdin, "-" when there are none; an even
# count averages the middle two and prints them with printf format $1.
median_of() {
    sort -g | awk -v fmt="$1\n" '{v[NR] = $1}
        END { if (NR == 0) print "-";
              else if (NR % 2) print v[(NR + 1) / 2];
              else printf fmt, (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-" || b + 0 == 0) print "-"; else printf "%.3g\n", a / b }'; }
