#!/bin/bash
# tests/fault/netns.sh: network faults between "hosts", one network
# namespace per rank (tests/netns/lib.sh), on each provider of -p (net,
# the default between nodes, and tcp;ofi_rxm):
#	loss	5% of the packets into every namespace dropped (nftables) and a
#		tbf rate cap on every eth0: allreduce of 4 KiB, 256 KiB and
#		4 MiB stays bit-exact and every rank exits 0
#	flap	one rank's cable out for T/3, then back: every rank exits 0
#	down	one rank's cable out for 3*T: every rank fails with
#		PS_COMM_ERR_PEER (5) within T + 10 s, the connected ones naming
#		the unplugged rank and it naming another; none hangs
# T is PS_COMM_PEER_TIMEOUT. Traffic stays inside our namespaces. The
# table is printed and written to tests/fault/netns-results.md in the
# build tree; logs are under tests/fault/logs-netns/.
#
#	sudo tests/fault/netns.sh [-n 2|4] [-t SECS] [-c "loss flap down"]
#				  [-v RANK] [-r RATE] [-p "net tcp"]
#
# Exit: 0 all passed, 1 any failed, 2 bad usage, 77 not root (or no
# namespace support).

[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
set -eu

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"
# shellcheck source=../netns/lib.sh
. "$here/../netns/lib.sh"

nranks=4
T=4
cases="loss flap down"
victim=1
rate=200mbit
providers="net tcp"
MARGIN=10
while getopts n:t:c:v:r:p:h opt; do
	case $opt in
	n) nranks=$OPTARG ;;
	t) T=$OPTARG ;;
	c) cases=$OPTARG ;;
	v) victim=$OPTARG ;;
	r) rate=$OPTARG ;;
	p) providers=$OPTARG ;;
	h) sed -n '2,/^$/s/^# \{0,1\}//p' "$0"; exit 0 ;;
	*) exit 2 ;;
	esac
done
case $nranks in 2 | 4) ;; *) echo "netns.sh: -n is 2 or 4" >&2; exit 2 ;; esac
case $T in '' | *[!0-9]* | 0) echo "netns.sh: -t wants whole seconds" >&2; exit 2 ;; esac
case $victim in '' | *[!0-9]*) echo "netns.sh: bad -v" >&2; exit 2 ;; esac
[ "$victim" -lt "$nranks" ] || { echo "netns.sh: -v $victim >= -n" >&2; exit 2; }

netns_require
PROG=$(cd "$top_builddir" && pwd)/tests/fault/fault_prog
if [ ! -x "$PROG" ]; then
	echo "SKIP: $PROG not built (make check builds it)"
	exit 77
fi
outdir=$top_builddir/tests/fault
logs=$outdir/logs-netns
rm -rf "$logs"
mkdir -p "$logs"

# netns_setup owns the traps; this runs after its teardown.
netns_exit_hook() { fault_kill_all; }
netns_setup "$nranks" || exit 1
fault_exec() {
	local i=$1
	shift
	exec ip netns exec "${NETNS_NAMES[i]}" "$@"
}
export PS_COMM_PEER_TIMEOUT=$T

# start NAME ARGS...: the job in the namespaces, up to its phase loop.
start() {
	local name=$1
	shift
	free_port
	# One directory per provider: a finished run's files must not
	# answer for the next one.
	fault_launch "$logs/$name-$FI_PROVIDER" "$nranks" "${NETNS_IP4[0]}:$port" \
		"$PROG" "$@"
	fault_wait_ready 2 60
}

mapfile -t RANKS < <(seq 0 $((nranks - 1)))

never_began() {
	fault_never_began "$1" "$1" "${RANKS[@]}"
	fault_rep_done "$1"
}

# clean_job KEY DEADLINE_S ARGS...: every rank must exit 0.
clean_job() {
	local key=$1 secs=$2 i
	shift 2
	fault_row "$key"
	start "${key%%|*}" "$@" || { never_began "$key"; return 0; }
	t_fault=$(fault_now)
	fault_wait $((t_fault + secs * 1000000)) "${RANKS[@]}" || true
	for i in "${RANKS[@]}"; do
		fault_judge "$key" clean "$i" x "$t_fault" "$key"
	done
	fault_rep_done "$key"
	fault_kill_all
}

case_loss() {
	local i size iters
	for i in "${RANKS[@]}"; do
		netns_loss "$i" 5
		netns_rate "$i" "$rate"
	done
	for size in 4K:200 256K:40 4M:8; do
		iters=${size#*:}
		size=${size%:*}
		clean_job "loss-$size|$FI_PROVIDER|-" 180 allreduce -s "$size" -n "$iters"
	done
	for i in "${RANKS[@]}"; do
		netns_loss "$i" 0
		netns_rate "$i" off
	done
}

# The cable comes back at TICK_AT (see fault_tick).
TICK_AT=
fault_tick() {
	if [ -n "$TICK_AT" ] && [ "$(fault_now)" -ge "$TICK_AT" ]; then
		netns_link_up "$victim"
		TICK_AT=
	fi
	return 0
}

# unplug KEY EXPECT OUT_MS DEADLINE_S ARGS...: run, unplug the victim
# for OUT_MS, judge every rank.
unplug() {
	local key=$1 expect=$2 out_ms=$3 secs=$4 i re others=()
	shift 4
	fault_row "$key"
	start "${key%%|*}" "$@" || { never_began "$key"; return 0; }
	sleep 0.5
	netns_link_down "$victim"
	t_fault=$(fault_now)
	TICK_AT=$((t_fault + out_ms * 1000))
	fault_wait $((t_fault + secs * 1000000)) "${RANKS[@]}" || true
	[ -n "$TICK_AT" ] && { TICK_AT=$(fault_now); fault_tick; }
	for i in "${RANKS[@]}"; do
		[ "$i" = "$victim" ] || others+=("$i")
	done
	for i in "${RANKS[@]}"; do
		if [ "$i" = "$victim" ]; then
			re=$(fault_blame_re "${others[@]}")
		else
			re=$(fault_blame_re "$victim")
		fi
		fault_judge "$key" "$expect" "$i" "$re" "$t_fault" "$key"
	done
	fault_rep_done "$key"
	fault_kill_all
}

case_flap() {
	local out=$((T * 1000 / 3))
	unplug "flap|$FI_PROVIDER|$victim" clean "$out" $((out / 1000 + 8 + T + MARGIN)) \
		allreduce -s 64K -d $((out / 1000 + 8))
}

case_down() {
	# Exit 5 only: a link that is down is no bootstrap failure and no
	# provider stuck on a dead process's lock.
	FAULT_OK_CODES=5 unplug "down|$FI_PROVIDER|$victim" fault $((3 * T * 1000)) $((T + MARGIN)) \
		allreduce -s 64K -d 300
}

echo "# netns.sh: $nranks namespaces, PS_COMM_PEER_TIMEOUT=$T, cases: $cases, providers: $providers"
for FI_PROVIDER in $providers; do
	export FI_PROVIDER
	for c in $cases; do
		case $c in
		loss | flap | down) "case_$c" ;;
		*) echo "netns.sh: unknown case '$c'" >&2; exit 2 ;;
		esac
	done
done

{
	echo "# pscomm network faults (tests/fault/netns.sh)"
	echo
	echo "$nranks namespaces, $providers, PS_COMM_PEER_TIMEOUT=$T s, loss 5% into every namespace + tbf $rate, unplugged rank $victim."
	echo "Every rank is counted; times run from the unplugging to each rank's exit."
	echo
	fault_table
} >"$outdir/netns-results.md"
sed -n '/^| case/,$p' "$outdir/netns-results.md"
if fault_bad; then
	echo "# FAILED"
	exit 1
fi
echo "# PASSED"
exit 0
