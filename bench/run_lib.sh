# run_lib.sh - the parts of bench/run: the systems it measures, how each is
# started and its output normalised, and the statistics, tables and plots
# made from the samples.  Sourced by bench/run (and bench/check), after
# mpi_common.sh; not run.
#
# Globals the caller sets: top build work OUT QUICK RUNS PROVIDERS NRANKS
# PARTS P2P_SIZES AR_SIZES P2P_ITERS P2P_WARM FI_ITERS RUN_TIMEOUT CC shim.
#
# A system is named KIND.GROUP.NAME:
#   KIND   p2p (2 ranks), allreduce (ranks from NRANKS) or ref (1 process)
#   GROUP  the transport family it is compared within: a libfabric provider
#          name for p2p and ref, "shm" for allreduce (one host)
#   NAME   pscomm fi_pingpong ompi_ofi ompi_native mpich zmq memcpy iperf3
# Every run leaves raw/SYSTEM.nRANKS.rROUND.csv with rows
# "size_bytes,metric,value" (the normalised samples) next to .out and .err.

MPICC=${MPICC:-$(command -v mpicc.openmpi || echo mpicc)}
MPIRUN=${MPIRUN:-$(command -v mpirun.openmpi || echo mpirun)}
MPICH_MPICC=${MPICH_MPICC:-mpicc.mpich}
MPICH_MPIEXEC=${MPICH_MPIEXEC:-mpiexec.mpich}
IPERF_PORT=5201   # run_one picks a free one per run

# pow2_sizes MIN MAX: MIN, 2*MIN, ... up to MAX on one line.
pow2_sizes() {
    local s=$1 out=""
    while ((s <= $2)); do out+="$s "; s=$((s * 2)); done
    echo "${out% }"
}

# fresh_dir BASE: BASE when it does not exist yet, else BASE-2, BASE-3, ...
fresh_dir() {
    local d=$1 k=2
    while [[ -e $d ]]; do d=$1-$k; k=$((k + 1)); done
    echo "$d"
}

# ---------------------------------------------------------------- peers ----

# build_mpi PREFIX NAME MPICC LAUNCHER: build PREFIX_pingpong and
# PREFIX_allreduce in $work with MPICC; returns 1 (saying so) when the MPI
# or a build is missing.
build_mpi() {
    if command -v "$3" >/dev/null && command -v "$4" >/dev/null &&
        compile_peer "$3" "$work/$1_pingpong" "$here/mpi_pingpong.c" &&
        compile_peer "$3" "$work/$1_allreduce" "$here/mpi_allreduce.c"; then
        return 0
    fi
    say "!! $2 ($3, $4) missing or failed to build: skipped"
    return 1
}

# build_peers: compile the reference programs into $work and set the
# have_* flags (1 = usable) and the *_bin paths; says what it skips and why.
build_peers() {
    have_ompi=0 have_mpich=0 have_zmq=0 have_fi=0 have_iperf=0
    find_pscomm pingpong
    ps_pp=$ps_bin ps_ar=$build/examples/allreduce
    say "-- building the reference programs in $work"
    compile_peer "$CC" "$work/memcpy_bw" "$here/memcpy_bw.c" || return 1
    build_mpi ompi "Open MPI" "$MPICC" "$MPIRUN" && have_ompi=1
    build_mpi mpich MPICH "$MPICH_MPICC" "$MPICH_MPIEXEC" && have_mpich=1
    if compile_peer "$CC" "$work/zmq_pingpong" "$here/zmq_pingpong.c" -lzmq; then
        have_zmq=1
    else
        say "!! zmq_pingpong failed to build (libzmq3-dev missing?): ZeroMQ skipped"
    fi
    command -v fi_pingpong >/dev/null && have_fi=1 ||
        say "!! fi_pingpong missing (libfabric-bin): no libfabric floor"
    command -v iperf3 >/dev/null && have_iperf=1 ||
        say "!! iperf3 missing: no TCP loopback reference"
}

# provider_present P: libfabric lists provider P on this machine.
provider_present() {
    fi_info -p "$1" >/dev/null 2>&1
}

# list_systems: fill SYSTEMS (the order of every round) from PARTS and the
# peers found; p2p groups are the providers of PROVIDERS that exist.
list_systems() {
    SYSTEMS=()
    local p
    if [[ " $PARTS " == *" refs "* ]]; then
        SYSTEMS+=(ref.shm.memcpy)
        [[ $have_iperf == 1 ]] && SYSTEMS+=(ref.tcp.iperf3)
    fi
    if [[ " $PARTS " == *" p2p "* ]]; then
        for p in $PROVIDERS; do
            if ! provider_present "$p"; then
                say "!! provider $p not present: skipped"
                continue
            fi
            [[ $have_pscomm == 1 ]] && SYSTEMS+=("p2p.$p.pscomm")
            [[ $have_fi == 1 ]] && SYSTEMS+=("p2p.$p.fi_pingpong")
            # The peers over sockets serve both TCP providers' groups.
            [[ $p == shm || $p == tcp || $p == net ]] || continue
            [[ $have_ompi == 1 ]] && ompi_ofi_ok "$p" && SYSTEMS+=("p2p.$p.ompi_ofi")
            [[ $have_ompi == 1 ]] && SYSTEMS+=("p2p.$p.ompi_native")
            [[ $have_mpich == 1 ]] && SYSTEMS+=("p2p.$p.mpich")
            [[ $have_zmq == 1 ]] && SYSTEMS+=("p2p.$p.zmq")
        done
    fi
    if [[ " $PARTS " == *" allreduce "* ]]; then
        [[ $have_pscomm == 1 && -x $ps_ar ]] && SYSTEMS+=(allreduce.shm.pscomm)
        [[ $have_ompi == 1 ]] && SYSTEMS+=(allreduce.shm.ompi_native)
        [[ $have_mpich == 1 ]] && SYSTEMS+=(allreduce.shm.mpich)
    fi
}

# ompi_ofi_ok P: Open MPI really runs pml cm / mtl ofi over provider P
# (probe_ofi in mpi_common.sh reads its verbose selection log); the log
# stays in $OUT/P/verify_ofi.log.
ompi_ofi_ok() {
    local p=$1
    mkdir -p "$OUT/$p"
    [[ $p == shm ]] && { build_shim || return 1; }
    OUTDIR=$OUT probe_ofi "$p" '^[0-9]+,[0-9.]+,[0-9.]+$' \
        "$MPIRUN" --allow-run-as-root --oversubscribe --bind-to none -n 2 -x FI_TCP_IFACE=lo -- \
        "$work/ompi_pingpong" --csv -m 8 -M 8 -i 10 -w 1
}

# sys_label SYSTEM: what it is, in words, for tables and plots.
sys_label() {
    local kind=${1%%.*} rest=${1#*.} group name
    group=${rest%%.*} name=${rest#*.}
    case $name in
    pscomm) [[ $kind == allreduce ]] && echo "pscomm (FI_PROVIDER unset: shm)" ||
            echo "pscomm over $group" ;;
    fi_pingpong) echo "fi_pingpong -p $group -e rdm -m tagged (libfabric floor)" ;;
    ompi_ofi) echo "Open MPI pml cm + mtl ofi over $group" ;;
    ompi_native)
        if [[ $kind == allreduce || $group == shm ]]; then echo "Open MPI pml ob1 + btl self,vader"
        else echo "Open MPI pml ob1 + btl self,tcp"; fi ;;
    mpich) [[ $kind == allreduce ]] &&
           echo "MPICH ch4:ucx, UCX_TLS=self,sm (5 calls per size where ranks exceed cores)" ||
           echo "MPICH ch4:ucx, UCX_TLS=$(ucx_tls "$group")" ;;
    zmq) [[ $group == shm ]] && echo "ZeroMQ DEALER/ROUTER over ipc://" ||
         echo "ZeroMQ DEALER/ROUTER over tcp://" ;;
    memcpy) echo "memcpy, one core (copy MB/s)" ;;
    iperf3) echo "iperf3 TCP over loopback, 1 stream" ;;
    esac
}

# ucx_tls GROUP: the UCX transports MPICH is held to for that group.
ucx_tls() { [[ $1 == shm ]] && echo self,sm || echo self,tcp; }

# sys_ranks SYSTEM: the rank counts it runs at.
sys_ranks() {
    case $1 in
    p2p.*) echo 2 ;;
    allreduce.*) echo "$NRANKS" ;;
    *) echo 1 ;;
    esac
}

# sys_cmd SYSTEM N ROUND: fill the global array `cmd` with the command for
# one run of SYSTEM on N ranks (fi_pingpong: the server of the first size;
# run_fi runs the real loop).  Round 1 of allreduce checks every result.
sys_cmd() {
    local s=$1 n=$2 round=$3 kind=${1%%.*} rest=${1#*.} group name
    group=${rest%%.*} name=${rest#*.}
    local -a pp=(--csv -m "${P2P_SIZES%% *}" -M "${P2P_SIZES##* }"
                 -i "$(slow_cut "$group" "$P2P_ITERS")" -w "$(slow_cut "$group" "$P2P_WARM")")
    local -a ar=(--csv -m "${AR_SIZES%% *}" -M "${AR_SIZES##* }")
    [[ $round == 1 ]] && ar+=(-c)
    local -a ompi=("$MPIRUN" --allow-run-as-root --oversubscribe --bind-to "$(ompi_bind)" -n "$n")
    local -a hydra=("$MPICH_MPIEXEC" -bind-to "$BIND" -n "$n")
    cmd=()
    case $kind.$name in
    ref.memcpy) cmd=("$work/memcpy_bw" -m 4096 -M 268435456 -t "$([[ $QUICK == 1 ]] && echo 0.05 || echo 0.2)") ;;
    ref.iperf3) cmd=(iperf3 -c 127.0.0.1 -p "$IPERF_PORT" -t 3 -f m) ;;
    p2p.pscomm) cmd=(env FI_PROVIDER="$group" "$ps_run" -n 2 --bind "$BIND" --provider "$group" -- "$ps_pp" "${pp[@]}") ;;
    p2p.fi_pingpong) fi_cmd "$group" "${P2P_SIZES%% *}" "$P2P_ITERS" 47592 server ;;
    p2p.ompi_ofi)
        cmd=("${ompi[@]}" --mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include "$group"
             -x FI_PROVIDER="$group" -x FI_TCP_IFACE=lo)
        [[ $group == shm ]] && cmd+=(-x LD_PRELOAD="$shim")
        cmd+=("$work/ompi_pingpong" "${pp[@]}") ;;
    p2p.ompi_native)
        local btl=self,tcp
        [[ $group == shm ]] && btl=self,vader
        cmd=("${ompi[@]}" --mca pml ob1 --mca btl "$btl" --mca btl_tcp_if_include lo
             "$work/ompi_pingpong" "${pp[@]}") ;;
    p2p.mpich) cmd=("${hydra[@]}" -genv UCX_TLS "$(ucx_tls "$group")" -genv UCX_NET_DEVICES lo
                    "$work/mpich_pingpong" "${pp[@]}") ;;
    p2p.zmq)
        local t=tcp
        [[ $group == shm ]] && t=ipc
        cmd=("$work/zmq_pingpong" --transport "$t" "${pp[@]}") ;;
    allreduce.pscomm) cmd=("$ps_run" -n "$n" --bind "$BIND" -- "$ps_ar" "${ar[@]}") ;;
    allreduce.ompi_native)
        cmd=("${ompi[@]}" --mca pml ob1 --mca btl self,vader "$work/ompi_allreduce" "${ar[@]}") ;;
    allreduce.mpich)
        # UCX polls without ever yielding: oversubscribed, each call takes
        # milliseconds at any size, so a few calls per size are enough.
        (( n > $(nproc) )) && ar+=(-i 5)
        cmd=("${hydra[@]}" -genv UCX_TLS self,sm "$work/mpich_allreduce" "${ar[@]}") ;;
    esac
}

# Open MPI's --bind-to value for $BIND: oversubscribed ranks share cores.
ompi_bind() { [[ $BIND == core ]] && echo core:overload-allowed || echo none; }

# fi_cmd PROVIDER SIZE ITERS PORT server|client: fill `cmd` with one
# fi_pingpong side for one size (the client connects to 127.0.0.1).
fi_cmd() {
    cmd=(fi_pingpong -p "$1" -e rdm -m tagged -S "$2" -I "$3")
    [[ $1 == shm ]] || cmd+=(-d lo)
    if [[ $5 == server ]]; then cmd+=(-B "$4"); else cmd+=(-P "$4" 127.0.0.1); fi
}

# slow_cut PROVIDER COUNT: COUNT, cut (to at least 10) on the providers
# that are slow here: sockets takes about 4 ms per message at any size
# (COUNT/100), udp;ofi_rxd milliseconds per MiB (COUNT/10).  A full run
# stays within tens of minutes.
slow_cut() {
    local d=1
    case $1 in sockets) d=100 ;; udp) d=10 ;; esac
    echo $(($2 / d < 10 ? 10 : $2 / d))
}

# fi_iters PROVIDER SIZE: the iteration count of the shorter fi_pingpong
# run at SIZE, pingpong's rule with FI_ITERS in place of its ITERS (larger,
# so that the difference of the two runs is steady at small sizes).
fi_iters() {
    local it
    it=$(slow_cut "$1" "$FI_ITERS")
    (($2 > 65536)) && it=$((it * 65536 / $2))
    ((it < 20)) && it=20
    echo "$it"
}

# fi_once PROVIDER SIZE ITERS: run one fi_pingpong pair and print its
# usec/xfer (one-way time per message, setup included), or nothing.
fi_once() {
    local port=$((20000 + RANDOM % 20000)) t
    fi_cmd "$1" "$2" "$3" "$port" server
    timeout "$RUN_TIMEOUT" "${cmd[@]}" >"$work/fi.srv" 2>&1 &
    local spid=$!
    for ((t = 0; t < 50; t++)); do
        ss -ltn 2>/dev/null | grep -q ":$port " && break
        sleep 0.05
    done
    fi_cmd "$1" "$2" "$3" "$port" client
    timeout "$RUN_TIMEOUT" "${cmd[@]}" 2>>"$work/fi.err" |
        awk 'NR > 1 && NF >= 7 { print $7; exit }'
    wait "$spid" 2>/dev/null
}

# run_fi PROVIDER: the libfabric floor at every size of P2P_SIZES, as
# "size,latency_us,value" rows.  fi_pingpong times its loop from the first
# message, so the connection set-up (rxm connects on first send) is in its
# figure; two runs of I and 2I iterations take it out.  A run of I round
# trips lasts E(I) = 2 I u(I) (u: its usec/xfer), so one way costs
# (E(2I) - E(I)) / 2I = 2 u(2I) - u(I).
run_fi() {
    local p=$1 size i u1 u2
    for size in $P2P_SIZES; do
        i=$(fi_iters "$p" "$size")
        u1=$(fi_once "$p" "$size" "$i")
        u2=$(fi_once "$p" "$size" $((i * 2)))
        [[ -n $u1 && -n $u2 ]] || { echo "fi_pingpong $p $size failed" >>"$work/fi.err"; continue; }
        awk -v s="$size" -v a="$u1" -v b="$u2" 'BEGIN { l = 2 * b - a;
            if (l <= 0) l = b; printf "%s,latency_us,%.3f\n", s, l }'
    done
}

# normalise SYSTEM: its raw output on stdin as "size,metric,value" rows on
# stdout.  Allreduce rows with errors are dropped and reported on stderr.
normalise() {
    case $1 in
    p2p.*.fi_pingpong) cat ;;
    p2p.*) awk -F, '$1 ~ /^[0-9]+$/ && NF == 3 {
               print $1 ",latency_us," $2; print $1 ",bandwidth_MBps," $3 }' ;;
    allreduce.*) awk -F, '$1 ~ /^[0-9]+$/ && NF == 9 {
               if ($9 != 0) { print "size " $1 ": " $9 " wrong elements" > "/dev/stderr"; next }
               print $1 ",time_us," $6; print $1 ",busbw_GBps," $8 }' ;;
    ref.*.memcpy) awk -F, '$1 ~ /^[0-9]+$/ { print $1 ",copy_MBps," $2 }' ;;
    ref.*.iperf3) awk '/receiver/ { for (i = 1; i < NF; i++)
               if ($(i + 1) == "Mbits/sec") printf "0,bandwidth_MBps,%.1f\n", $i / 8 }' ;;
    esac
}

# run_one SYSTEM N ROUND: one run, raw output kept and normalised; prints a
# line with its duration, or why it failed.
run_one() {
    local s=$1 n=$2 round=$3 base="$OUT/raw/$1.n$2.r$3" rc=0 t0=$SECONDS rows ipid=""
    case $s in
    p2p.*.fi_pingpong)
        : >"$work/fi.err"
        local p=${s#p2p.}
        run_fi "${p%.fi_pingpong}" >"$base.out"
        cp "$work/fi.err" "$base.err" ;;
    *)
        if [[ $s == ref.tcp.iperf3 ]]; then
            IPERF_PORT=$((20000 + RANDOM % 20000))
            # bounded: a client that never connects must not leave it waiting
            timeout "$RUN_TIMEOUT" iperf3 -s -1 -p "$IPERF_PORT" >/dev/null 2>&1 &
            ipid=$!
            sleep 0.3
        fi
        sys_cmd "$s" "$n" "$round"
        timeout "$RUN_TIMEOUT" "${cmd[@]}" >"$base.out" 2>"$base.err" || rc=$?
        [[ -n $ipid ]] && wait "$ipid" 2>/dev/null ;;
    esac
    normalise "$s" <"$base.out" >"$base.csv" 2>>"$base.err"
    rows=$(wc -l <"$base.csv")
    if [[ $rc -ne 0 || $rows -eq 0 ]]; then
        say "   $s n=$n: FAILED (rc=$rc, $rows samples kept) - $base.err"
        tail -n 3 "$base.err" | sed 's/^/     | /'
    else
        say "   $s n=$n: $rows samples in $((SECONDS - t0)) s"
    fi
}

# ------------------------------------------------------------- recording ----

# record_env: the machine, the versions and the transports, as text.
record_env() {
    local ncpu mem
    ncpu=$(nproc)
    mem=$(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo)
    echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "machine: $(hostname), $(lscpu | sed -n 's/^Model name: *//p' | head -1), $ncpu cores, $mem, Linux $(uname -r)"
    echo "pscomm: $(git -C "$top" describe --always --dirty 2>/dev/null || echo unknown) ($build)"
    echo "libfabric: $(fi_info --version 2>/dev/null | sed -n 's/^libfabric: //p')"
    [[ $have_ompi == 1 ]] && echo "Open MPI: $("$MPIRUN" --version 2>/dev/null | head -1 | awk '{print $NF}')"
    [[ $have_mpich == 1 ]] && echo "MPICH: $(mpichversion 2>/dev/null | awk '/Version:/ {print $NF}'), device $(mpichversion 2>/dev/null | awk '/Device:/ {print $NF}'), UCX $(ucx_version)"
    [[ $have_zmq == 1 ]] && echo "ZeroMQ: $(pkg-config --modversion libzmq 2>/dev/null || echo unknown)"
    [[ $have_iperf == 1 ]] && echo "iperf3: $(iperf3 --version 2>/dev/null | head -1 | awk '{print $2}')"
    if [[ $BIND == core ]]; then
        echo "binding: a core per rank for pscomm (--bind core), Open MPI (--bind-to core:overload-allowed) and MPICH (-bind-to core); fi_pingpong, ZeroMQ and the references unbound"
    else
        echo "binding: none for every system (pscomm PS_COMM_BIND unset, mpirun --bind-to none, hydra default)"
    fi
    local n over=""
    for n in 2 $NRANKS; do ((n > ncpu)) && over+=" $n"; done
    [[ -n $over ]] && echo "oversubscribed: rank counts$over exceed the $ncpu cores" ||
        echo "oversubscribed: no"
    echo "pscomm fabric on one host: $(pscomm_fabric)"
}

# ucx_version: the UCX library version MPICH runs on, from its package.
ucx_version() {
    dpkg-query -W -f '${Version}' libucx0 2>/dev/null || echo unknown
}

# pscomm_fabric: what pscomm itself says it chose, from rank 0's info log.
pscomm_fabric() {
    [[ $have_pscomm == 1 ]] || { echo "n/a"; return; }
    PS_COMM_LOG_LEVEL=info "$ps_run" -n 2 -- "$ps_pp" -m 8 -M 8 -i 2 -w 1 2>&1 |
        sed -n 's/.*rank 0 info: fabrics: //p' | head -1
}
