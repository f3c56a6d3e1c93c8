#!/bin/bash
# tests/rdma/suite.sh: pscomm's suites over real kernel RDMA devices,
# soft-RoCE (rxe) and soft-iWARP (siw), between two virtual machines
# (tests/rdma/rig.sh), through libfabric's verbs;ofi_rxm exactly as on a
# ConnectX or Chelsio NIC.  `make check-rdma` runs it; README.md beside
# this file says how to run it by hand, and on two hosts with real NICs.
#
#	tests/rdma/suite.sh [-d "rxe siw"] [-c "CASE ..."] [-r REPS]
#			    [-f FAULT_REPS]
#
# Cases (default all, in this order; each guest pair boots once per
# device, and again after the power-off case):
#	info		ps_comm_info in a guest shows verbs usable, its device
#			and link layer, and opens it (--open)
#	p2p		the point-to-point suite, 2 ranks (1 + 1) and 4 (2 + 2)
#	coll		every collective checked bitwise, 2 and 4 ranks
#	hier		2 + 2 ranks with FI_PROVIDER unset: shm inside each
#			guest, verbs between them (hardware first), and the
#			hierarchical collectives chosen
#	mr		memory registration: the modes verbs reports,
#			ps_comm_mem_register, the MR cache under reuse/free
#	examples	pingpong and allreduce -c across the guests
#	van		kvstore: scheduler and server in guest 0, worker in
#			guest 1, every pulled value checked
#	pslite		ps-lite's test_kv_app across the guests, then its
#			test_kv_app_benchmark over pscomm and over ZeroMQ
#			(times printed), when PSC_PSLITE_DIR names a ps-lite
#			built over pscomm's van (doc/pslite.md); skipped,
#			saying so, otherwise
#	vankill		the server kills itself (SIGKILL) on a push, then on
#			a pull: the worker fails naming a node, in time
#	rankkill	SIGKILL of a rank in the other guest: every survivor
#			fails naming it within PS_COMM_PEER_TIMEOUT
#	recover		examples/elastic across the guests while ranks kill
#			themselves: over verbs, rank 3 then rank 0; shm inside
#			each guest and verbs between, rank 0's shm peer (the
#			survivors rebuild); and a new process joining a grow.
#			Every survivor finishes every step with exact results
#			and the same members
#	wire		the wire cut for less than the peer timeout: the job
#			completes
#	poweroff	guest 1's qemu killed: guest 0's ranks fail cleanly
# -r: repetitions of every case (default 1); -f: repetitions of the fault
# cases vankill, rankkill, wire and poweroff (default -r).  A summary
# table (case x device: pass, fail, hang) is printed and written to
# tests/rdma/results.md in the build tree.  Exit 0 when every run
# passed, 1 otherwise, 77 when the rig cannot run here (it says why).

set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=rig.sh
. "$here/rig.sh"

top_builddir=${top_builddir:-.}
top_builddir=$(cd "$top_builddir" && pwd)
devices="rxe siw"
all_cases="info p2p coll hier mr examples van pslite vankill rankkill recover wire poweroff"
cases=$all_cases
reps=1
freps=
while getopts d:c:r:f: opt; do
	case $opt in
	d) devices=$OPTARG ;;
	c) cases=$OPTARG ;;
	r) reps=$OPTARG ;;
	f) freps=$OPTARG ;;
	*) echo "usage: $0 [-d DEVICES] [-c CASES] [-r REPS] [-f FAULT_REPS]" >&2
		exit 2 ;;
	esac
done
freps=${freps:-$reps}
for c in $cases; do
	case " $all_cases " in *" $c "*) ;; *)
		echo "$0: unknown case '$c' (cases: $all_cases)" >&2; exit 2 ;;
	esac
done

B=$top_builddir
for p in tests/mp/p2p_suite tests/mp/coll_suite tests/mp/mr_suite \
	tests/fault/fault_prog examples/pingpong examples/allreduce \
	examples/kvstore examples/elastic tools/ps_comm_info; do
	if [ ! -x "$B/$p" ]; then
		echo "not ok - $B/$p not built (make check builds it)"
		exit 1
	fi
done

rig_require
rig_prepare || { echo "not ok - preparing the guest kernel failed"; exit 1; }

# The ranks' timeouts under emulation: a round trip takes milliseconds.
PEER_TIMEOUT=${RIG_PEER_TIMEOUT:-10}
failed=0
declare -A PASS FAIL HANG NOTE KNOWN
ok() { echo "ok - $*"; }
not_ok() { echo "not ok - $*"; failed=1; }

# tally CASE OUTCOME: count one run (pass, fail or hang) of CASE on the
# current device.
tally() {
	local k="$1 $RIG_DEV"
	case $2 in
	pass) PASS[$k]=$((${PASS[$k]:-0} + 1)) ;;
	hang) HANG[$k]=$((${HANG[$k]:-0} + 1)) ;;
	*) FAIL[$k]=$((${FAIL[$k]:-0} + 1)) ;;
	esac
}

# since T0: seconds (one decimal) from T0, a `date +%s.%N` reading.
since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

# --- Jobs across the guests ------------------------------------------------

port=$((20000 + $$ % 10000))
job_seq=0
JOB_RC=()
JOB_OUT=()
JOB_WHERE=()

# job_start LAYOUT CMD: start the ranks of one job, LAYOUT being the number
# of ranks in guest 0 and in guest 1 ("1 1", "2 2"); rank 0 is in guest 0.
# CMD is a shell command run in the build tree with PS_COMM_RANK, _SIZE
# and _ROOT, a job key, PS_COMM_PEER_TIMEOUT and FI_PROVIDER
# ("verbs;ofi_rxm" unless JOB_PROV says otherwise; JOB_PROV=auto leaves
# it unset) set, plus JOB_ENV (words VAR=VALUE).
job_start() {
	local layout=$1 cmd=$2 g n size=0 rank=0 env prov
	for n in $layout; do size=$((size + n)); done
	port=$((port + 1))
	job_seq=$((job_seq + 1))
	prov="export FI_PROVIDER='${JOB_PROV:-verbs;ofi_rxm}'"
	[ "${JOB_PROV:-}" = auto ] && prov="unset FI_PROVIDER"
	env="$prov; export PS_COMM_ROOT=${RIG_IP[0]}:$port PS_COMM_SIZE=$size"
	env="$env PS_COMM_JOB_KEY_FILE=/rig/key PSC_TEST_SHARED_DIR=/rig-shared"
	env="$env PS_COMM_PEER_TIMEOUT=$PEER_TIMEOUT ${RIG_ENV:-} ${JOB_ENV:-}"
	JOB_RC=() JOB_OUT=() JOB_WHERE=()
	g=0
	for n in $layout; do
		for ((i = 0; i < n; i++)); do
			JOB_WHERE[rank]="$g j$job_seq.r$rank"
			JOB_OUT[rank]=$RIG_DIR/g$g/j$job_seq.r$rank.out
			rig_start "$g" "j$job_seq.r$rank" \
				"$env PS_COMM_RANK=$rank; exec $cmd"
			rank=$((rank + 1))
		done
		g=$((g + 1))
	done
	# JOB_JOIN new processes in the last guest, joining a grow of the
	# job (PS_COMM_JOIN at rank 0's rendezvous), after its ranks.
	for ((i = 0; i < ${JOB_JOIN:-0}; i++)); do
		JOB_WHERE[rank]="$((g - 1)) j$job_seq.r$rank"
		JOB_OUT[rank]=$RIG_DIR/g$((g - 1))/j$job_seq.r$rank.out
		rig_start "$((g - 1))" "j$job_seq.r$rank" \
			"$env; unset PS_COMM_ROOT PS_COMM_SIZE; export PS_COMM_JOIN=${RIG_IP[0]}:$port; exec $cmd"
		rank=$((rank + 1))
	done
	JOB_SIZE=$rank
}

# job_wait SECONDS: wait for every rank of the job, SECONDS in all; their
# statuses in JOB_RC[] (124: still running at the deadline, then killed,
# after rig_stacks took the stacks of every rank still running, before
# any of them was killed). Returns 0 when all exited 0, 2 when any hung,
# 1 otherwise.
job_wait() {
	local end=$(($(date +%s) + $1)) r g name left any=0 hung=0
	for ((r = 0; r < JOB_SIZE; r++)); do
		read -r g name <<<"${JOB_WHERE[r]}"
		left=$((end - $(date +%s)))
		[ $left -lt 1 ] && left=1
		rig_ended "$g" "$name" "$left"
	done
	for ((r = 0; r < JOB_SIZE; r++)); do
		read -r g name <<<"${JOB_WHERE[r]}"
		[ -e "$RIG_DIR/g$g/$name.rc" ] && continue
		rig_alive "$g" && rig_stacks "$g" "$name"
	done
	for ((r = 0; r < JOB_SIZE; r++)); do
		read -r g name <<<"${JOB_WHERE[r]}"
		rig_wait "$g" "$name" 1
		JOB_RC[r]=$?
		[ "${JOB_RC[r]}" -eq 124 ] && hung=1
		[ "${JOB_RC[r]}" -ne 0 ] && any=1
	done
	[ $hung -eq 1 ] && return 2
	return $any
}

# job_report NAME STATUS: one ok/not ok line and a tally for a job whose
# job_wait status is STATUS; a failed job shows the ends of its outputs.
job_report() {
	local name=$1 st=$2 r
	if [ "$st" -eq 0 ]; then
		ok "$name on $RIG_DEV"
		tally "$CASE" pass
		return 0
	fi
	not_ok "$name on $RIG_DEV: statuses ${JOB_RC[*]}$([ "$st" -eq 2 ] && echo ' (hung)')"
	job_outputs
	[ "$st" -eq 2 ] && tally "$CASE" hang || tally "$CASE" fail
	return 1
}

# job_outputs: each rank's failed checks (the suites' "not ok" lines,
# which a traced run buries), the end of its output, and a hung rank's
# threads as gdb saw them before the kill. A rank that failed without a
# word gets its guest's last console lines instead (the kernel's view).
job_outputs() {
	local r g name
	for ((r = 0; r < JOB_SIZE; r++)); do
		echo "#   rank $r (exit ${JOB_RC[r]}):"
		grep -m 10 '^not ok' "${JOB_OUT[r]}" 2>/dev/null |
			sed 's/^/#     /'
		tail -8 "${JOB_OUT[r]}" 2>/dev/null | sed 's/^/#     /'
		head -60 "${JOB_OUT[r]%.out}.stacks" 2>/dev/null |
			sed 's/^/#     /'
		if [ ! -s "${JOB_OUT[r]}" ]; then
			read -r g name <<<"${JOB_WHERE[r]}"
			echo "#     (no output in ${JOB_OUT[r]}; guest $g's console:)"
			tail -5 "$RIG_DIR/g$g/console.log" 2>/dev/null |
				sed 's/^/#     /'
		fi
	done
}

# boot_pair DEVICE: boot both guests with DEVICE and give them a fresh job
# key; 1 when they did not come up.
boot_pair() {
	rig_shutdown
	rig_boot "$1" || return 1
	umask 077
	head -c 32 /dev/urandom | base64 >"$RIG_DIR/g0/key"
	cp "$RIG_DIR/g0/key" "$RIG_DIR/g1/key"
	umask 022
}

# wire_died: after a failed job, see whether the wire between the guests
# still carries traffic.  When it does not (0), show each guest's kernel
# log and counters and the host's sockets (rig_diag), note it in the
# table, and boot the pair again, so that one dead wire fails at most one
# job and not every job after it.  1 when the wire works (or a guest is
# down on purpose).
wire_died() {
	[ -n "${RIG_DOWN:-}" ] && return 1
	{ rig_alive 0 && rig_alive 1; } || return 1
	rig_wire_ok && return 1
	echo "# the wire between the guests carries no traffic after this job:"
	rig_diag 2>&1 | sed 's/^/#   /'
	NOTE["$CASE $RIG_DEV"]+=" wire-died"
	if ! boot_pair "$RIG_DEV"; then
		not_ok "booting the guests again with $RIG_DEV"
		REBOOT=1
	fi
	return 0
}

# job NAME SECONDS LAYOUT CMD: run one job and report it.  A job that
# failed because the wire between the guests died under it (nothing a
# program in a guest can do takes a virtual NIC down for good) runs once
# more on a freshly booted pair; the table notes it, and a second failure
# counts.
job() {
	local st
	job_start "$3" "$4"
	job_wait "$2"
	st=$?
	# One wire check per failed job; a dead wire is mended either way.
	if [ "$st" -ne 0 ] && wire_died && [ -z "${JOB_RETRY:-}" ]; then
		echo "# $1 on $RIG_DEV (exit ${JOB_RC[*]}) ran on a wire that died; once more:"
		job_outputs
		NOTE["$CASE $RIG_DEV"]+=" retried"
		JOB_RETRY=1 job "$@"
		return $?
	fi
	job_report "$1" $st
}

# grep_job PATTERN: does any rank's output match PATTERN (grep -E)?
grep_job() {
	local r
	for ((r = 0; r < JOB_SIZE; r++)); do
		grep -Eq -- "$1" "${JOB_OUT[r]}" 2>/dev/null && return 0
	done
	return 1
}

# all_ranks PATTERN: does every rank's output match PATTERN (grep -E)?
all_ranks() {
	local r
	for ((r = 0; r < JOB_SIZE; r++)); do
		grep -Eq -- "$1" "${JOB_OUT[r]}" 2>/dev/null || return 1
	done
	return 0
}

# check NAME COMMAND...: one ok/not ok line and a tally; status 1 when
# not ok.
check() {
	local name=$1
	shift
	if "$@"; then
		ok "$name on $RIG_DEV"
		tally "$CASE" pass
	else
		not_ok "$name on $RIG_DEV"
		tally "$CASE" fail
		return 1
	fi
}

# --- The cases ------------------------------------------------------------

case_info() {
	local out=$RIG_DIR/info.out blk=$RIG_DIR/info.verbs st link=RoCE
	[ "$RIG_DEV" = siw ] && link=iWARP
	rig_run 0 180 "$B/tools/ps_comm_info --open" >"$out" 2>&1
	st=$?
	# verbs;ofi_rxm's block: its line and the indented lines below it.
	awk '/^  [^ ]/ { on = ($1 == "verbs;ofi_rxm") } on' "$out" >"$blk"
	check "ps_comm_info --open runs (exit $st)" [ $st -eq 0 ]
	check "ps_comm_info: verbs;ofi_rxm usable on ${RIG_DEV}0" \
		grep -Eq "^  verbs;ofi_rxm +yes:.*${RIG_DEV}0" "$blk"
	check "ps_comm_info: ${RIG_DEV}0's link is $link" \
		grep -Eq "^ +link $link" "$blk"
	check "ps_comm_info --open: verbs;ofi_rxm opens" \
		grep -Eq "^ +open: ok" "$blk"
	[ "$failed" = 0 ] || sed 's/^/#   /' "$out" | head -60
}

case_p2p() {
	job "p2p suite, 2 ranks" 900 "1 1" "$B/tests/mp/p2p_suite --quick"
	job "p2p suite, 4 ranks" 1200 "2 2" "$B/tests/mp/p2p_suite --quick"
}

case_coll() {
	job "collectives, 2 ranks" 300 "1 1" "$B/tests/mp/coll_suite --quick"
	job "collectives, 4 ranks" 600 "2 2" "$B/tests/mp/coll_suite --quick"
}

# hier_why: what each rank of the last job ran on, and what pscomm said
# about its choice (a provider that failed to open, a fallback).
hier_why() {
	local r
	for ((r = 0; r < JOB_SIZE; r++)); do
		echo "#   rank $r (exit ${JOB_RC[r]}):"
		grep -E -m 12 '^# rank [0-9]* of|^pscomm' "${JOB_OUT[r]}" \
			2>/dev/null | sed 's/^/#     /'
	done
}

case_hier() {
	JOB_PROV=auto \
		job "2 + 2 ranks, providers chosen by pscomm" 1200 "2 2" \
		"$B/tests/mp/coll_suite --quick --algo auto --expect-hier yes"
	check "FI_PROVIDER unset: every rank runs shm inside its guest and verbs between them" \
		all_ranks '^# rank [0-9]* of 4: provider shm\+verbs;ofi_rxm$' ||
		hier_why
	# The suite's own count of what the dispatcher chose.
	check "FI_PROVIDER unset: the hierarchical collectives are chosen" \
		all_ranks '^ok - rank [0-9]*: [1-9][0-9]* collectives ran hierarchically'
}

case_mr() {
	local info
	job "memory registration suite" 600 "1 1" "$B/tests/mp/mr_suite"
	# Named only now: a job on a wire that died boots a new pair, with a
	# new RIG_DIR.
	info=$RIG_DIR/mr-info.out
	# The provider pscomm judged usable asks for local registration:
	# ps_comm_info's report (the library's own verdict) says so.
	rig_run 0 180 "FI_PROVIDER='verbs;ofi_rxm' $B/tools/ps_comm_info" \
		>"$info" 2>&1
	check "verbs asks pscomm to register local buffers (mr_mode LOCAL)" \
		grep -Eq "^  verbs;ofi_rxm +yes: .*mr_mode [A-Z_|]*LOCAL" "$info"
	# Every buffer through a two-entry cache without bounce copies:
	# registrations evicted, reused and freed under traffic, on a real
	# device that pins pages.
	JOB_ENV="PS_COMM_MR_CACHE_ENTRIES=2 PS_COMM_MR_CACHE_BYTES=256K PS_COMM_MR_BOUNCE_SIZE=0" \
		job "p2p suite through a two-entry MR cache" 900 "1 1" \
		"$B/tests/mp/p2p_suite --quick"
}

case_examples() {
	job "pingpong" 600 "1 1" \
		"$B/examples/pingpong -m 1 -M 1048576 -i 10 -w 2"
	job "allreduce -c, 2 ranks" 600 "1 1" \
		"$B/examples/allreduce -c -m 4 -M 1048576 -i 5"
	job "allreduce -c, 4 ranks" 900 "2 2" \
		"$B/examples/allreduce -c -m 4 -M 262144 -i 5"
}

# kv_start KVSTORE_ARGS: a 1 + 1 + 1 kvstore job, scheduler and server in
# guest 0, worker in guest 1, with KV_ENV (words VAR=VALUE) on the
# server.  Names: kv$job_seq.{sched,server,worker}.
kv_start() {
	local env
	port=$((port + 1))
	job_seq=$((job_seq + 1))
	KV=kv$job_seq
	env="export FI_PROVIDER='verbs;ofi_rxm' DMLC_PS_ROOT_URI=${RIG_IP[0]}"
	env="$env DMLC_PS_ROOT_PORT=$port DMLC_NUM_SERVER=1 DMLC_NUM_WORKER=1"
	env="$env PS_COMM_JOB_KEY_FILE=/rig/key ${RIG_ENV:-}"
	rig_start 0 "$KV.sched" "$env DMLC_ROLE=scheduler \
		DMLC_NODE_HOST=${RIG_IP[0]}; exec $B/examples/kvstore $1"
	rig_start 0 "$KV.server" "$env DMLC_ROLE=server \
		DMLC_NODE_HOST=${RIG_IP[0]} ${KV_ENV:-}; exec $B/examples/kvstore $1"
	rig_start 1 "$KV.worker" "$env DMLC_ROLE=worker \
		DMLC_NODE_HOST=${RIG_IP[1]}; exec $B/examples/kvstore $1"
}

case_van() {
	local s w c
	kv_start "-k 4 -s 65536 -i 3"
	rig_wait 1 "$KV.worker" 600
	w=$?
	rig_wait 0 "$KV.server" 60
	s=$?
	rig_wait 0 "$KV.sched" 60
	c=$?
	check "kvstore: the scheduler exits 0 (exit $c)" [ "$c" = 0 ]
	# Every node must stop cleanly: over verbs;ofi_rxm a node used to
	# die with SIGSEGV inside fi_close of its endpoint when it stopped
	# (providers/verbs.c, stop_unclosed).
	check "kvstore: the worker exits 0 (exit $w)" [ "$w" = 0 ]
	check "kvstore: the server exits 0 (exit $s)" [ "$s" = 0 ]
	check "kvstore: the worker checked every value" \
		grep -q ', 0 wrong values' "$RIG_DIR/g1/$KV.worker.out"
	[ $w -eq 0 ] || tail -5 "$RIG_DIR/g1/$KV.worker.out" | sed 's/^/#   /'
}

# pslite_job VAN PROG: one ps-lite job of PROG (a ps-lite test program)
# over VAN (pscomm: verbs;ofi_rxm; zmq: ZeroMQ over the guests' TCP):
# scheduler and server in guest 0, one worker in guest 1. Sets PS_ST
# (" worker=RC server=RC sched=RC") and PS_OUT (the worker's output).
pslite_job() {
	local van=$1 prog=$2 r env
	port=$((port + 1))
	job_seq=$((job_seq + 1))
	env="export DMLC_PS_ROOT_URI=${RIG_IP[0]} DMLC_PS_ROOT_PORT=$port"
	env="$env DMLC_NUM_SERVER=1 DMLC_NUM_WORKER=1 DMLC_PS_VAN_TYPE=$van"
	env="$env DMLC_ENABLE_RDMA=0 PS_COMM_JOB_KEY_FILE=/rig/key"
	[ "$van" = pscomm ] && env="$env FI_PROVIDER='verbs;ofi_rxm'"
	rig_start 0 "p$job_seq.sched" "$env DMLC_ROLE=scheduler DMLC_NODE_HOST=${RIG_IP[0]}; exec $prog"
	rig_start 0 "p$job_seq.server" "$env DMLC_ROLE=server DMLC_NODE_HOST=${RIG_IP[0]}; exec $prog"
	rig_start 1 "p$job_seq.worker" "$env DMLC_ROLE=worker DMLC_NODE_HOST=${RIG_IP[1]}; exec $prog"
	PS_ST=
	for r in "1 worker" "0 server" "0 sched"; do
		set -- $r
		rig_wait "$1" "p$job_seq.$2" 600
		PS_ST="$PS_ST $2=$?"
	done
	PS_OUT=$RIG_DIR/g1/p$job_seq.worker.out
}

# ps-lite's test_kv_app over pscomm, then its test_kv_app_benchmark (10
# million keys pushed and pulled once) over pscomm and over ZeroMQ: both
# must pass, and the benchmark's times are printed as figures (there is
# no target under emulation).
case_pslite() {
	local d=${PSC_PSLITE_DIR:-} van push pull
	if [ -z "$d" ] || [ ! -x "$d/tests/test_kv_app" ]; then
		echo "ok - ps-lite's test_kv_app on $RIG_DEV # SKIP PSC_PSLITE_DIR does not name a ps-lite build with tests/test_kv_app (doc/pslite.md)"
		return 0
	fi
	pslite_job pscomm "$d/tests/test_kv_app"
	check "ps-lite test_kv_app across the guests:$PS_ST" \
		[ "$PS_ST" = " worker=0 server=0 sched=0" ]
	[ -x "$d/tests/test_kv_app_benchmark" ] || return 0
	for van in pscomm zmq; do
		pslite_job "$van" "$d/tests/test_kv_app_benchmark"
		check "ps-lite test_kv_app_benchmark over $van:$PS_ST" \
			[ "$PS_ST" = " worker=0 server=0 sched=0" ]
		push=$(sed -n 's/.*Push average time cost: \([0-9.]*\)ms.*/\1/p' "$PS_OUT")
		pull=$(sed -n 's/.*Pull average time cost: \([0-9.]*\)ms.*/\1/p' "$PS_OUT")
		echo "# ps-lite benchmark on $RIG_DEV over $van: push ${push:-?} ms, pull ${pull:-?} ms (10,000,000 keys)"
	done
}

# A server that dies on its 3rd push or pull: the worker, waiting for
# that reply, must fail naming a node within PS_COMM_PEER_TIMEOUT (plus
# the probe's second) and never hang.
case_vankill() {
	local what w t0 took
	for what in push pull; do
		KV_ENV="KVSTORE_DIE_AT=$what:3" kv_start "-k 4 -s 65536 -i 1000"
		_rig_wait_file "$RIG_DIR/g0/$KV.server.rc" 600 "${_RIG_PIDS[0]}"
		t0=$(date +%s.%N)
		# A worker still running at the bound: its stacks, then the kill.
		rig_ended 1 "$KV.worker" $((PEER_TIMEOUT * 3 + 30)) ||
			rig_stacks 1 "$KV.worker"
		rig_wait 1 "$KV.worker" 1
		w=$?
		took=$(since "$t0")
		rig_wait 0 "$KV.sched" 60
		if [ $w -eq 124 ]; then
			not_ok "server killed on a $what: the worker hung"
			tally "$CASE" hang
			tail -5 "$RIG_DIR/g1/$KV.worker.out" | sed 's/^/#   /'
			head -60 "$RIG_DIR/g1/$KV.worker.stacks" | sed 's/^/#   /'
		elif [ $w -ne 0 ] && grep -q "kvstore: node [0-9]* failed" \
			"$RIG_DIR/g1/$KV.worker.out"; then
			ok "server killed on a $what: worker out in $took s on $RIG_DEV"
			tally "$CASE" pass
			NOTE["vankill-$what $RIG_DEV"]+=" $took"
		else
			not_ok "server killed on a $what: worker exit $w after $took s"
			tally "$CASE" fail
			tail -5 "$RIG_DIR/g1/$KV.worker.out" | sed 's/^/#   /'
		fi
	done
}

# fault_job LAYOUT ARGS: fault_prog's allreduce loop across the guests,
# started and waited for until every rank began its loop (its second
# "ready" line).  Returns 1 if a rank did not get there.
fault_job() {
	local r n g name
	job_start "$1" "$B/tests/fault/fault_prog $2"
	for ((r = 0; r < JOB_SIZE; r++)); do
		n=0
		while [ "$(grep -c '^ready rank=' "${JOB_OUT[r]}" 2>/dev/null)" != 2 ]; do
			n=$((n + 1))
			if [ $n -gt 3000 ]; then
				return 1
			fi
			read -r g name <<<"${JOB_WHERE[r]}"
			[ -e "$RIG_DIR/g$g/$name.rc" ] && return 1
			sleep 0.1
		done
	done
	return 0
}

# survivors_fail VICTIMS T0 NAME: judge every rank but VICTIMS: each must
# exit with PS_COMM_ERR_PEER (5), _BOOTSTRAP (7) or the watchdog's 75
# within PEER_TIMEOUT * 2 + 20 s of T0, and none may hang.  BLAME, when
# set, is a rank its stderr must name ("rank N").
survivors_fail() {
	local victims=" $1 " t0=$2 name=$3 r st end took worst=0 bad= g n
	end=$((PEER_TIMEOUT * 2 + 20))
	for ((r = 0; r < JOB_SIZE; r++)); do
		case $victims in *" $r "*) continue ;; esac
		read -r g n <<<"${JOB_WHERE[r]}"
		if [ "${RIG_DOWN:-}" = "$g" ]; then
			continue
		fi
		rig_wait "$g" "$n" "$end"
		st=$?
		took=$(since "$t0")
		case $st in
		5 | 7 | 75) ;;
		124) bad="$bad rank $r hung;" ;;
		*) bad="$bad rank $r exit $st;" ;;
		esac
		if [ -n "${BLAME:-}" ] && [ "$st" != 124 ] &&
			! grep -q "rank $BLAME" "${JOB_OUT[r]}"; then
			bad="$bad rank $r does not name rank $BLAME;"
		fi
		worst=$took
	done
	if [ -z "$bad" ]; then
		ok "$name: every survivor failed cleanly, the last $worst s after the fault, on $RIG_DEV"
		tally "$CASE" pass
		NOTE["$CASE $RIG_DEV"]+=" $worst"
	else
		not_ok "$name on $RIG_DEV:$bad"
		case $bad in *hung*) tally "$CASE" hang ;; *) tally "$CASE" fail ;; esac
		for ((r = 0; r < JOB_SIZE; r++)); do
			echo "#   rank $r:"
			tail -4 "${JOB_OUT[r]}" 2>/dev/null | sed 's/^/#     /'
		done
		wire_died
	fi
}

case_rankkill() {
	local t0 victim g n
	for victim in 2 0; do
		if ! fault_job "2 2" "allreduce -s 65536 -d 600"; then
			not_ok "rank $victim killed: the job did not start"
			tally "$CASE" fail
			job_wait 30 >/dev/null
			continue
		fi
		read -r g n <<<"${JOB_WHERE[victim]}"
		rig_kill "$g" "$n" KILL
		t0=$(date +%s.%N)
		# The other ranks of the victim's guest may see its exit first,
		# the ranks across the wire only by the network.
		BLAME=$victim survivors_fail "$victim" "$t0" \
			"SIGKILL of rank $victim (guest $g)"
		job_wait 30 >/dev/null
	done
}

# recover_job NAME LAYOUT MEMBERS ARGS: examples/elastic -s 20 ARGS
# across the guests (JOB_JOIN new processes too): the ranks named in
# MEMBERS ("0 2 3") must each finish every step with exact results and
# exactly MEMBERS as the members, and every other rank, killed by its
# own --fail, must end by SIGKILL. No rank may hang.
recover_job() {
	local name=$1 layout=$2 members=$3 r st bad=
	shift 3
	job_start "$layout" "$B/examples/elastic -s 20 $*"
	job_wait 900
	st=$?
	for ((r = 0; r < JOB_SIZE; r++)); do
		case " $members " in
		*" $r "*)
			[ "${JOB_RC[r]}" = 0 ] &&
				grep -q "^elastic: rank $r: 20 steps, every result exact, .* ranks: \[$members\]\$" \
					"${JOB_OUT[r]}" ||
				bad="$bad rank $r did not finish with members [$members];" ;;
		*)
			[ "${JOB_RC[r]}" = 137 ] ||
				bad="$bad rank $r exit ${JOB_RC[r]}, not killed;" ;;
		esac
	done
	if [ -z "$bad" ]; then
		ok "$name on $RIG_DEV"
		tally "$CASE" pass
	else
		not_ok "$name on $RIG_DEV:$bad"
		job_outputs
		[ "$st" -eq 2 ] && tally "$CASE" hang || tally "$CASE" fail
		wire_died
	fi
}

# Recovery across the guests (ps_comm_revoke, agree, shrink, grow).
case_recover() {
	recover_job "elastic over verbs: rank 3, then rank 0 (the liveness root) killed" \
		"2 2" "1 2" --fail 3@5 --fail 0@10
	JOB_PROV=auto recover_job "elastic on shm inside each guest and verbs between: rank 0's shm peer killed, the survivors rebuild" \
		"2 2" "0 2 3" --fail 1@5
	JOB_JOIN=1 recover_job "elastic over verbs grown from 3 to 4 ranks by a new process" \
		"2 1" "0 1 2 3" --grow 1@5
}

case_wire() {
	local st
	if [ "$(id -u)" != 0 ] || ! command -v nft >/dev/null; then
		echo "ok - wire cut on $RIG_DEV # SKIP needs root and nftables"
		return 0
	fi
	if ! fault_job "1 1" "allreduce -s 65536 -d 40"; then
		not_ok "wire cut: the job did not start"
		tally "$CASE" fail
		job_wait 30 >/dev/null
		return
	fi
	rig_wire_down || { not_ok "wire cut: nft failed"; return; }
	sleep $((PEER_TIMEOUT / 3))
	rig_wire_up
	job_wait 300
	st=$?
	# The emulated wire sometimes never carries traffic again (as under
	# the other cases' bursts): then the cut lasted longer than the
	# case's 3 s, and it runs once more on a fresh pair; a wire that
	# works again after a failed job counts against pscomm.
	if [ "$st" -ne 0 ] && [ -z "${JOB_RETRY:-}" ] && wire_died; then
		echo "# wire cut on $RIG_DEV (exit ${JOB_RC[*]}): the wire never came back; once more:"
		job_outputs
		NOTE["$CASE $RIG_DEV"]+=" retried"
		JOB_RETRY=1 case_wire
		return
	fi
	job_report "wire cut for $((PEER_TIMEOUT / 3)) s (peer timeout $PEER_TIMEOUT s): the job completes" $st ||
		wire_died
}

case_poweroff() {
	local t0
	if ! fault_job "2 2" "allreduce -s 65536 -d 600"; then
		not_ok "power-off: the job did not start"
		tally "$CASE" fail
		return
	fi
	rig_poweroff 1
	t0=$(date +%s.%N)
	RIG_DOWN=1 survivors_fail "2 3" "$t0" "guest 1 powered off"
	RIG_DOWN=
	# Guest 1 is gone: boot the pair again for whatever follows.
	rig_shutdown
	REBOOT=1
}

# --- Main -------------------------------------------------------------------

# Everything above is read before main runs, so the script may be edited
# while it runs (bash reads a script as it goes).
main() {

	results=$top_builddir/tests/rdma/results.md
	mkdir -p "$(dirname "$results")"
	start=$(date +%s)
	for dev in $devices; do
		REBOOT=1
		for c in $cases; do
			n=$reps
			case $c in vankill | rankkill | wire | poweroff) n=$freps ;; esac
			for ((rep = 1; rep <= n; rep++)); do
				if [ "$REBOOT" = 1 ]; then
					if ! boot_pair "$dev"; then
						not_ok "booting the guests with $dev"
						RIG_DEV=$dev CASE=boot tally boot fail
						continue 3
					fi
					REBOOT=0
				fi
				CASE=$c
				echo "# $c on $dev ($rep/$n)"
				t=$(date +%s)
				"case_$c"
				echo "# $c on $dev: $(($(date +%s) - t)) s"
			done
		done
		rig_shutdown
	done

	{
		echo "| case | device | checks | pass | fail | hang | open defect | fault to last survivor exit (s); notes |"
		echo "|---|---|---|---|---|---|---|---|"
		for c in $cases boot; do
			for dev in $devices; do
				k="$c $dev"
				p=${PASS[$k]:-0} f=${FAIL[$k]:-0} h=${HANG[$k]:-0}
				o=${KNOWN[$k]:-0}
				[ $((p + f + h + o)) -eq 0 ] && continue
				t=${NOTE[$k]:-}
				[ "$c" = vankill ] &&
					t="push:${NOTE[vankill-push $dev]:-} pull:${NOTE[vankill-pull $dev]:-}${NOTE[$k]:-}"
				echo "| $c | $dev | $((p + f + h + o)) | $p | $f | $h | $o | ${t# } |"
			done
		done
		echo
		echo "tests/rdma/suite.sh -d \"$devices\" -r $reps -f $freps: $(($(date +%s) - start)) s"
	} >"$results"
	cat "$results"
	return $failed
}
main; exit $?
