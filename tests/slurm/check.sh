#!/bin/bash
# tests/slurm/check.sh: pscomm under a real Slurm (make check-slurm).
#
# A cluster of its own, torn down at the end: munged with a fresh key,
# slurmctld on a controller "host" (ctl) and one slurmd on each of two
# compute "hosts" (n1, n2), each host a network namespace with its own
# host name (UTS namespace) and cgroup mounts (tests/netns/lib.sh).
# srun runs on ctl. For every launch mode, --mpi=pmix (when this Slurm
# has the plugin), --mpi=pmi2 and plain srun (--mpi=none, the SLURM_*
# variables plus MASTER_ADDR/MASTER_PORT):
#	pingpong	2 nodes x 1 rank
#	allreduce	allreduce -c, 2 nodes x 2 ranks, every rank on
#			shm+net (shared memory inside a node, the network
#			between them) with FI_PROVIDER unset
#	scancel		a running job cancelled: srun and every rank gone
#			within 20 s, no process left on any node
#	kill		rank 3 killed (SIGKILL): srun reports it, the three
#			survivors fail naming rank 3, nothing left behind
#	sbatch		examples/slurm.sbatch (pmix and pmi2), checked
#	fence		(pmi2) rank 1 never starts pscomm: rank 0 fails its
#			bootstrap at PS_COMM_TIMEOUT instead of waiting in
#			PMI2's fence for ever
# Every case's output is under the scratch directory named at the end
# when one fails (kept), removed otherwise.
#
#	sudo tests/slurm/check.sh [-m "pmix pmi2 plain"] [-c "pingpong ..."]
#
# Exit: 0 all passed, 1 any failed, 2 bad usage, 77 no root, no network
# namespaces or no Slurm (tools/install-deps installs it).

[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
set -u

here=$(cd "$(dirname "$0")" && pwd)
top_builddir=${top_builddir:-$(cd "$here/../.." && pwd)}
modes="pmix pmi2 plain"
cases="pingpong allreduce scancel kill sbatch fence"
while getopts m:c:h opt; do
	case $opt in
	m) modes=$OPTARG ;;
	c) cases=$OPTARG ;;
	h) sed -n '2,/^$/s/^# \{0,1\}//p' "$0"; exit 0 ;;
	*) exit 2 ;;
	esac
done

for c in slurmctld slurmd srun scancel squeue sinfo munged unshare; do
	if ! command -v "$c" >/dev/null 2>&1; then
		echo "SKIP: $c not installed (tools/install-deps installs Slurm and munge)"
		exit 77
	fi
done
# shellcheck source=../netns/lib.sh
. "$here/../netns/lib.sh"
netns_require
B=$(cd "$top_builddir" && pwd)/examples
for p in pingpong allreduce; do
	if [ ! -x "$B/$p" ]; then
		echo "not ok - $B/$p not built"
		exit 1
	fi
done

D=$(mktemp -d /tmp/psc-slurm.XXXXXX)
chmod 755 "$D"
passes=0 failures=0
ok() { echo "ok - $*"; passes=$((passes + 1)); }
not_ok() { echo "not ok - $*"; failures=$((failures + 1)); }
netns_exit_hook() {
	if [ "$failures" -eq 0 ]; then
		rm -rf "$D"
	else
		echo "# logs kept in $D"
	fi
}

netns_setup 3 || exit 1
# on NODE CMD...: run CMD on node 0 (ctl), 1 (n1) or 2 (n2).
on() {
	local ns=${NETNS_NAMES[$1]}
	shift
	ip netns exec "$ns" "$@"
}

# --- the cluster ----------------------------------------------------------
mkdir -p "$D/run" "$D/state" "$D/log" "$D/etc"
chmod 755 "$D/run"
chmod 700 "$D/etc"
head -c 1024 /dev/urandom >"$D/etc/munge.key"
chmod 600 "$D/etc/munge.key"
export MUNGE_SOCK=$D/run/munge.sock
on 0 munged --socket="$MUNGE_SOCK" --key-file="$D/etc/munge.key" \
	--log-file="$D/log/munged.log" --pid-file="$D/run/munged.pid" \
	--seed-file="$D/etc/munge.seed" || {
	not_ok "munged did not start"
	cat "$D/log/munged.log"
	exit 1
}

cat >"$D/slurm.conf" <<EOF
ClusterName=pscomm
SlurmctldHost=ctl(${NETNS_IP4[0]})
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$MUNGE_SOCK
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool/%n
TmpFS=$D/tmp/%n
SlurmctldPidFile=$D/run/slurmctld.pid
SlurmdPidFile=$D/run/slurmd.%n.pid
SlurmctldLogFile=$D/log/slurmctld.log
SlurmdLogFile=$D/log/slurmd.%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/linear
ReturnToService=2
InactiveLimit=0
KillWait=5
PropagateResourceLimits=NONE
NodeName=n1 NodeAddr=${NETNS_IP4[1]} CPUs=2 Sockets=1 CoresPerSocket=2 ThreadsPerCore=1 State=UNKNOWN
NodeName=n2 NodeAddr=${NETNS_IP4[2]} CPUs=2 Sockets=1 CoresPerSocket=2 ThreadsPerCore=1 State=UNKNOWN
PartitionName=debug Nodes=n1,n2 Default=YES MaxTime=INFINITE State=UP
EOF
# slurmd wants a cgroup mount even with proctrack/linuxproc, and
# "ip netns exec" hides the host's /sys/fs/cgroup: mount v1 hierarchies.
echo "CgroupPlugin=cgroup/v1" >"$D/cgroup.conf"
export SLURM_CONF=$D/slurm.conf

on 0 unshare --uts sh -c 'hostname ctl && exec slurmctld -D -i' \
	>"$D/log/ctl.out" 2>&1 &
for i in 1 2; do
	mkdir -p "$D/spool/n$i" "$D/tmp/n$i"
	# shellcheck disable=SC2016 # the inner shell expands its own
	on "$i" unshare --uts sh -c '
		hostname "$1" && mount -t tmpfs cgroup /sys/fs/cgroup &&
		for c in freezer cpuset memory devices; do
			mkdir -p /sys/fs/cgroup/$c &&
			mount -t cgroup -o $c cgroup /sys/fs/cgroup/$c || exit 1
		done && exec slurmd -D' sh "n$i" >"$D/log/n$i.out" 2>&1 &
done

# wait_for SECS COMMAND...: every 0.1 s until COMMAND succeeds.
wait_for() {
	local end=$(($(date +%s) + $1))
	shift
	until "$@"; do
		[ "$(date +%s)" -lt "$end" ] || return 1
		sleep 0.1
	done
}
both_idle() {
	[ "$(on 0 sinfo -h -N -o '%N %t' 2>/dev/null | grep -c ' idle$')" = 2 ]
}
if ! wait_for 60 both_idle; then
	not_ok "the cluster did not come up (sinfo: $(on 0 sinfo -h -N -o '%N %t' 2>&1 | tr '\n' ' '))"
	tail -n 5 "$D"/log/*.out "$D"/log/*.log
	exit 1
fi
echo "# cluster up: slurmctld on ctl, slurmd on n1 and n2 (Slurm $(srun --version | cut -d' ' -f2))"

if ! on 0 srun --mpi=list 2>&1 | grep -qw pmix; then
	modes=$(echo " $modes " | sed 's/ pmix / /')
	echo "ok - --mpi=pmix # SKIP this Slurm has no PMIx plugin"
fi

# --- the cases --------------------------------------------------------------
port=29600
# launch MODE: the srun arguments and environment of a launch mode.
launch() {
	port=$((port + 1))
	case $1 in
	pmix | pmi2) echo "--mpi=$1" ;;
	plain) echo "--mpi=none --export=ALL,MASTER_ADDR=${NETNS_IP4[1]},MASTER_PORT=$port" ;;
	esac
}

# ranks_left: pids of pscomm examples still running on n1 or n2.
ranks_left() {
	local i p
	for i in 1 2; do
		for p in $(ip netns pids "${NETNS_NAMES[$i]}"); do
			case $(cat "/proc/$p/comm" 2>/dev/null) in
			pingpong | allreduce) echo "$p" ;;
			esac
		done
	done
}
none_left() { [ -z "$(ranks_left)" ]; }

# job_running NAME: a job of that name is running.
job_running() {
	[ "$(on 0 squeue -h -n "$1" -o %T 2>/dev/null)" = RUNNING ]
}

# srun_case NAME SECS SRUN-ARGS...: run srun on ctl, output in $D/NAME.*
# (one file per task), srun's own in $D/NAME.srun; sets $rc.
srun_case() {
	local name=$1 secs=$2
	shift 2
	# shellcheck disable=SC2068 # launch flags are words on purpose
	on 0 timeout -k 5 "$secs" srun -J "$name" -o "$D/$name.%t" "$@" \
		>"$D/$name.srun" 2>&1
	rc=$?
}

case_pingpong() {
	local m=$1 name=pingpong-$1
	# shellcheck disable=SC2046
	srun_case "$name" 90 $(launch "$m") -N2 -n2 "$B/pingpong" -M 64K -i 100
	if [ "$rc" -eq 0 ] && grep -q '^ *65536 ' "$D/$name.0"; then
		ok "$m: pingpong, 2 nodes"
	else
		not_ok "$m: pingpong, 2 nodes: srun exit $rc"
		tail -n 5 "$D/$name".* | sed 's/^/#   /'
	fi
}

case_allreduce() {
	local m=$1 name=allreduce-$1 shmnet
	# shellcheck disable=SC2046
	srun_case "$name" 120 $(launch "$m") -N2 -n4 -m block \
		env -u FI_PROVIDER PS_COMM_LOG_LEVEL=info \
		"$B/allreduce" -c -m 4K -M 1M
	shmnet=$(cat "$D/$name".[0-3] | grep -c 'rank [0-3] of 4, provider shm+')
	if [ "$rc" -eq 0 ] && [ "$shmnet" = 4 ] &&
		grep -q '^ *1048576 .* 0$' "$D/$name.0"; then
		ok "$m: allreduce -c, 2 nodes x 2 ranks, every rank on shm+network"
	else
		not_ok "$m: allreduce -c, 2x2: srun exit $rc, $shmnet of 4 ranks on shm+network"
		tail -n 5 "$D/$name".* | sed 's/^/#   /'
	fi
}

# A job that runs for ever once started: allreduce of 4 KiB, 10^9 times.
long_job() {
	local m=$1 name=$2
	# shellcheck disable=SC2046
	on 0 srun -J "$name" -o "$D/$name.%t" $(launch "$m") -N2 -n4 -m block \
		env PS_COMM_PEER_TIMEOUT=5 PS_COMM_LOG_LEVEL=info \
		"$B/allreduce" -m 4K -M 4K \
		-i 1000000000 >"$D/$name.srun" 2>&1 &
	srun_pid=$!
}
# all_four NAME: each of the 4 ranks has finished ps_comm_init (its
# info line on stderr, which is not buffered).
all_four() {
	[ "$(cat "$D/$1".[0-3] 2>/dev/null | grep -c 'rank [0-3] of 4, provider')" = 4 ]
}

# finished PID SECS: PID exited within SECS; its status in $rc.
finished() {
	local pid=$1 end=$(($(date +%s) + $2))
	while kill -0 "$pid" 2>/dev/null; do
		if [ "$(date +%s)" -ge "$end" ]; then
			kill -9 "$pid" 2>/dev/null
			wait "$pid" 2>/dev/null
			return 1
		fi
		sleep 0.1
	done
	wait "$pid"
	rc=$?
	return 0
}

case_scancel() {
	local m=$1 name=scancel-$1 t0
	long_job "$m" "$name"
	if ! wait_for 60 all_four "$name"; then
		not_ok "$m: scancel: the job never ran its 4 ranks"
		on 0 scancel -n "$name"
		finished "$srun_pid" 30
		return
	fi
	t0=$(date +%s)
	on 0 scancel -n "$name"
	if ! finished "$srun_pid" 20; then
		not_ok "$m: scancel: srun still running 20 s after scancel"
	elif ! wait_for 20 none_left; then
		not_ok "$m: scancel: ranks left behind: $(ranks_left | tr '\n' ' ')"
	else
		ok "$m: scancel of a running job: every rank gone in $(($(date +%s) - t0)) s"
	fi
}

case_kill() {
	local m=$1 name=kill-$1 victim='' p t0 named=0 r
	long_job "$m" "$name"
	if ! wait_for 60 all_four "$name"; then
		not_ok "$m: kill: the job never ran its 4 ranks"
		on 0 scancel -n "$name"
		finished "$srun_pid" 30
		return
	fi
	for p in $(ranks_left); do
		tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null |
			grep -qx 'SLURM_PROCID=3' && victim=$p
	done
	if [ -z "$victim" ]; then
		not_ok "$m: kill: no process has SLURM_PROCID=3"
		on 0 scancel -n "$name"
		finished "$srun_pid" 30
		return
	fi
	t0=$(date +%s)
	kill -9 "$victim"
	if ! finished "$srun_pid" 40; then
		not_ok "$m: kill: srun still running 40 s after rank 3 was killed"
		on 0 scancel -n "$name"
		return
	fi
	for r in 0 1 2; do
		grep -qs 'rank 3 (host n2' "$D/$name.$r" && named=$((named + 1))
	done
	if [ "$rc" -eq 0 ]; then
		not_ok "$m: kill: srun exited 0 although rank 3 was killed"
	elif [ "$named" != 3 ]; then
		not_ok "$m: kill: $named of 3 survivors named rank 3"
		tail -n 3 "$D/$name".* | sed 's/^/#   /'
	elif ! wait_for 20 none_left; then
		not_ok "$m: kill: ranks left behind: $(ranks_left | tr '\n' ' ')"
	else
		ok "$m: rank 3 killed: srun exit $rc, all 3 survivors named it, done in $(($(date +%s) - t0)) s"
	fi
}

# PMI2's fence has no timeout of its own: with rank 1 never starting
# pscomm, rank 0 (PS_COMM_TIMEOUT=3) must fail its bootstrap within
# seconds, saying so, not wait in the fence for ever.
case_fence() {
	local m=$1 name=fence-$1 t0
	[ "$m" = pmi2 ] || return
	t0=$(date +%s)
	# shellcheck disable=SC2016 # the ranks' shell expands these
	on 0 srun -J "$name" -o "$D/$name.%t" --mpi=pmi2 -N2 -n2 \
		env PS_COMM_TIMEOUT=3 sh -c '
		[ "$SLURM_PROCID" = 1 ] && exec sleep 60
		exec "$0" -m 4K -M 4K' "$B/allreduce" >"$D/$name.srun" 2>&1 &
	srun_pid=$!
	if wait_for 20 grep -qs 'bootstrap (pmi2) failed' "$D/$name.0"; then
		ok "pmi2: a rank that never starts fails the others' fence in $(($(date +%s) - t0)) s (PS_COMM_TIMEOUT=3)"
	else
		not_ok "pmi2: rank 0 still in its fence 20 s after start (PS_COMM_TIMEOUT=3)"
		tail -n 3 "$D/$name".* | sed 's/^/#   /'
	fi
	on 0 scancel -n "$name"
	finished "$srun_pid" 30
}

# examples/slurm.sbatch, as the README shows it, with --wait.
case_sbatch() {
	local m=$1 name=sbatch-$1
	[ "$m" = plain ] && return
	on 0 timeout -k 5 120 env PSCOMM_BIN="$B" PSCOMM_SRUN_MPI="$m" \
		sbatch --wait -o "$D/$name.out" "$here/../../examples/slurm.sbatch" \
		>"$D/$name.sbatch" 2>&1
	rc=$?
	if [ "$rc" -eq 0 ] && grep -q '^ *1048576 .* 0$' "$D/$name.out"; then
		ok "$m: examples/slurm.sbatch under sbatch --wait"
	else
		not_ok "$m: examples/slurm.sbatch: sbatch exit $rc"
		tail -n 5 "$D/$name".* | sed 's/^/#   /'
	fi
}

for m in $modes; do
	case $m in pmix | pmi2 | plain) ;; *) echo "check.sh: bad mode $m" >&2; exit 2 ;; esac
	for c in $cases; do
		case $c in
		pingpong | allreduce | scancel | kill | sbatch | fence) "case_$c" "$m" ;;
		*) echo "check.sh: bad case $c" >&2; exit 2 ;;
		esac
	done
done

echo "# $passes passed, $failures failed"
[ "$failures" -eq 0 ]
