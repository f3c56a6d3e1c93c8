# tests/netns/lib.sh: helpers to run pscomm ranks on "separate hosts", each
# rank in its own Linux network namespace, joined by a bridge that lives in a
# dedicated "switch" namespace.  Source it from bash:
#
#	. tests/netns/lib.sh
#	netns_require		# SKIP (exit 77) unless root + netns + veth work
#	netns_setup 3		# psc$$-0..2 + psc$$-sw; teardown trapped on exit
#	netns_run_ranks 60 examples/pingpong -i 10
#
# Nothing is created in, or sent to, the root namespace: the only links made
# are veth pairs whose ends live in our own namespaces, and every address
# used is one of ours.  See README.md beside this file.
#
# Variables read (all optional):
#	NETNS_PREFIX	namespace name prefix (default psc$$-)
#	NETNS_FAMILY	4 (default) or 6: family of PS_COMM_ROOT
#	NETNS_PORT	root port (default 29500 + number of runs so far)
#	NETNS_FAIL_FAST	1: once one rank fails, kill the others
#	NETNS_LAYOUT	ranks per namespace, e.g. "3 1" (default: one each);
#			ranks are numbered namespace by namespace
#	NETNS_AUTO_FABRIC 1: leave FI_PROVIDER unset in the ranks (pscomm
#			then uses shm inside a namespace, tcp between them)
#	NETNS_VERBOSE	1: trace the setup commands
# Variables set:
#	NETNS_NAMES[i] NETNS_IP4[i] NETNS_IP6[i] NETNS_SWITCH NETNS_COUNT
#	NETNS_HAVE_IP6 (1/0)
#	NETNS_RANK_RC[i] NETNS_LAST_ROOT (after netns_run_ranks)

NETNS_PREFIX=${NETNS_PREFIX:-psc$$-}
NETNS_NAMES=()
NETNS_IP4=()
NETNS_IP6=()
NETNS_RANK_RC=()
NETNS_SWITCH=
NETNS_COUNT=0
NETNS_HAVE_IP6=0
_NETNS_CREATED=()	# every namespace we made, switch included
_NETNS_RUNS=0

_netns_log() { echo "netns: $*" >&2; }

_netns_do() {
	[ "${NETNS_VERBOSE:-0}" = 1 ] && echo "+ $*" >&2
	"$@"
}

# Accept a rank index or a full namespace name.
_netns_resolve() {
	case $1 in
	'' | *[!0-9]*) echo "$1" ;;
	*)
		if [ "$1" -lt "$NETNS_COUNT" ]; then
			echo "${NETNS_NAMES[$1]}"
		else
			_netns_log "no namespace with index $1"
			return 1
		fi
		;;
	esac
}

# Exit 77 with "SKIP: reason" unless this process can make namespaces,
# veth pairs and a bridge.
netns_require() {
	local probe=${NETNS_PREFIX}probe reason=
	if [ "$(id -u)" != 0 ]; then
		reason="needs root (network namespaces)"
	elif ! command -v ip >/dev/null 2>&1; then
		reason="iproute2 'ip' not found"
	elif ! command -v timeout >/dev/null 2>&1; then
		reason="coreutils 'timeout' not found"
	elif ! ip netns add "$probe" 2>/dev/null; then
		reason="'ip netns add' failed (no namespace support or privilege)"
	elif ! ip -n "$probe" link add pscva type veth peer name pscvb \
		2>/dev/null; then
		reason="cannot create a veth pair (CONFIG_VETH?)"
	elif ! ip -n "$probe" link add pscbr type bridge 2>/dev/null; then
		reason="cannot create a bridge (CONFIG_BRIDGE?)"
	elif ! ip netns exec "$probe" true 2>/dev/null; then
		reason="'ip netns exec' failed"
	fi
	ip netns del "$probe" 2>/dev/null || true
	if [ -n "$reason" ]; then
		echo "SKIP: $reason"
		exit 77
	fi
	return 0
}

# netns_setup N: N host namespaces ${NETNS_PREFIX}0..N-1, each with eth0
# (plus lo) plugged into bridge br0 of the namespace ${NETNS_PREFIX}sw.
netns_setup() {
	local n=${1:-2} i ns r hex tries
	case $n in '' | *[!0-9]*) _netns_log "netns_setup: bad count '$n'"; return 1 ;; esac
	if [ "$n" -lt 1 ] || [ "$n" -gt 250 ]; then
		_netns_log "netns_setup: count $n out of range 1..250"
		return 1
	fi
	if [ "$NETNS_COUNT" -gt 0 ] || [ -n "$NETNS_SWITCH" ]; then
		_netns_log "netns_setup: already set up (call netns_teardown first)"
		return 1
	fi
	trap '_netns_on_exit' EXIT
	trap '_netns_on_signal INT 130' INT
	trap '_netns_on_signal TERM 143' TERM

	# Subnet from our PID: 10.R.0.0/24 and fd00:R::/64, R in 1..250.
	r=$(($$ % 250 + 1))
	hex=$(printf %x "$r")
	NETNS_SWITCH=${NETNS_PREFIX}sw

	_netns_do ip netns add "$NETNS_SWITCH" || { _netns_setup_failed; return 1; }
	_NETNS_CREATED+=("$NETNS_SWITCH")
	# The switch needs no IP stack of its own: keep it quiet.
	ip netns exec "$NETNS_SWITCH" sh -c '
		for f in /proc/sys/net/ipv6/conf/default/disable_ipv6 \
			 /proc/sys/net/ipv6/conf/all/disable_ipv6; do
			[ -w "$f" ] && echo 1 >"$f"; done; true' || true
	_netns_do ip -n "$NETNS_SWITCH" link add br0 type bridge \
		stp_state 0 forward_delay 0 mcast_snooping 0 &&
		_netns_do ip -n "$NETNS_SWITCH" link set br0 up ||
		{ _netns_setup_failed; return 1; }

	[ -d /proc/sys/net/ipv6 ] && NETNS_HAVE_IP6=1

	for ((i = 0; i < n; i++)); do
		ns=${NETNS_PREFIX}$i
		_netns_do ip netns add "$ns" || { _netns_setup_failed; return 1; }
		_NETNS_CREATED+=("$ns")
		NETNS_NAMES[i]=$ns
		NETNS_IP4[i]=10.$r.0.$((i + 1))
		NETNS_IP6[i]=
		[ "$NETNS_HAVE_IP6" = 1 ] && NETNS_IP6[i]=fd00:$hex::$((i + 1))
		NETNS_COUNT=$((i + 1))
		# Before the veth exists, so eth0 inherits "default": no DAD
		# (addresses usable at once, link-local too), no RA, and keep
		# addresses when the link goes down (netns_link_down).
		if [ "$NETNS_HAVE_IP6" = 1 ]; then
			ip netns exec "$ns" sh -c '
				c=/proc/sys/net/ipv6/conf
				for d in all default; do
					echo 0 >$c/$d/disable_ipv6
					echo 0 >$c/$d/accept_dad
					echo 0 >$c/$d/accept_ra
					echo 1 >$c/$d/keep_addr_on_down
				done' 2>/dev/null || true
		fi
		# Switch end "p<i>", host end created directly in the host
		# namespace as eth0 (pscomm skips veth* names by default).
		_netns_do ip -n "$NETNS_SWITCH" link add "p$i" type veth \
			peer name eth0 netns "$ns" &&
			_netns_do ip -n "$NETNS_SWITCH" link set "p$i" master br0 up &&
			_netns_do ip -n "$ns" link set lo up &&
			_netns_do ip -n "$ns" addr add "${NETNS_IP4[i]}/24" dev eth0 &&
			_netns_do ip -n "$ns" link set eth0 up ||
			{ _netns_setup_failed; return 1; }
		if [ -n "${NETNS_IP6[i]}" ]; then
			_netns_do ip -n "$ns" -6 addr add "${NETNS_IP6[i]}/64" \
				dev eth0 nodad || { _netns_setup_failed; return 1; }
		fi
	done

	# Wait (5 s at most) until every bridge port forwards and no address
	# is tentative; with STP off and DAD off this is normally at once.
	for ((tries = 0; tries < 50; tries++)); do
		if ! bridge -n "$NETNS_SWITCH" link show 2>/dev/null |
			grep -v 'state forwarding' | grep -q . &&
			! for ns in "${NETNS_NAMES[@]}"; do
				ip -n "$ns" addr show dev eth0
			done | grep -q tentative; then
			break
		fi
		sleep 0.1
	done
	export NETNS_COUNT NETNS_SWITCH NETNS_HAVE_IP6
	return 0
}

_netns_setup_failed() {
	_netns_log "netns_setup failed; tearing down"
	netns_teardown
}

# Kill every process inside our namespaces (TERM, then KILL).
_netns_kill_all() {
	local ns pids tries
	for tries in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21; do
		pids=
		for ns in "${_NETNS_CREATED[@]}"; do
			pids+=" $(ip netns pids "$ns" 2>/dev/null)"
		done
		pids=$(echo $pids)
		[ -z "$pids" ] && return 0
		if [ "$tries" -eq 1 ]; then
			kill -TERM $pids 2>/dev/null || true
		elif [ "$tries" -ge 11 ]; then
			kill -KILL $pids 2>/dev/null || true
		fi
		sleep 0.1
	done
	_netns_log "processes still alive in namespaces: $pids"
	return 1
}

# Remove everything netns_setup made. Safe to call more than once.
netns_teardown() {
	local ns i
	[ "${#_NETNS_CREATED[@]}" -eq 0 ] && return 0
	_netns_kill_all
	# Host namespaces first, switch last; deleting a namespace destroys
	# its veth ends and so their peers.
	for ((i = ${#_NETNS_CREATED[@]} - 1; i >= 0; i--)); do
		ns=${_NETNS_CREATED[i]}
		ip netns del "$ns" 2>/dev/null ||
			_netns_log "could not delete namespace $ns"
	done
	_NETNS_CREATED=()
	NETNS_NAMES=()
	NETNS_IP4=()
	NETNS_IP6=()
	NETNS_SWITCH=
	NETNS_COUNT=0
	return 0
}

# A caller that needs its own cleanup defines netns_exit_hook; it runs
# after the teardown on exit or signal (netns_setup owns the traps).
_netns_on_exit() {
	local rc=$?
	netns_teardown
	declare -F netns_exit_hook >/dev/null && netns_exit_hook
	exit "$rc"
}

_netns_on_signal() {
	_netns_log "caught SIG$1; cleaning up"
	trap - EXIT INT TERM
	netns_teardown
	declare -F netns_exit_hook >/dev/null && netns_exit_hook
	exit "$2"
}

# netns_root_addr [PORT]: PS_COMM_ROOT for namespace 0 in NETNS_FAMILY.
netns_root_addr() {
	local port=${1:-${NETNS_PORT:-29500}}
	if [ "${NETNS_FAMILY:-4}" = 6 ]; then
		echo "[${NETNS_IP6[0]}]:$port"
	else
		echo "${NETNS_IP4[0]}:$port"
	fi
}

# netns_run_ranks TIMEOUT CMD [ARGS...]: rank i runs CMD in namespace i with
# PS_COMM_RANK/SIZE/ROOT and FI_PROVIDER set; the caller's exported variables
# (PS_COMM_*, FI_*, PATH, ...) pass through.  Output lines are prefixed
# "[i] ".  Every rank still running after TIMEOUT seconds is killed.
# Returns 0 if all ranks exit 0; the common status if all exit alike (e.g.
# 77); else (NETNS_FAIL_FAST) the status of the rank that failed first;
# else 124 if any timed out; else the lowest failing rank's status.
# Per-rank statuses are left in NETNS_RANK_RC[i].
netns_run_ranks() {
	local tmo=$1 i n=$NETNS_COUNT root port pid rc first= timedout=0
	local killed= start=$SECONDS elapsed h k
	local -a pids=() host_of=() fabric=(FI_PROVIDER="${FI_PROVIDER:-tcp}")
	local -A rank_of=()
	shift
	# Rank i runs in namespace host_of[i].
	if [ -n "${NETNS_LAYOUT:-}" ]; then
		h=0
		for k in $NETNS_LAYOUT; do
			for ((i = 0; i < k; i++)); do host_of+=("$h"); done
			h=$((h + 1))
		done
		if [ "$h" -gt "$NETNS_COUNT" ]; then
			_netns_log "netns_run_ranks: NETNS_LAYOUT has $h hosts, only $NETNS_COUNT namespaces"
			return 1
		fi
		n=${#host_of[@]}
	else
		for ((i = 0; i < n; i++)); do host_of+=("$i"); done
	fi
	[ "${NETNS_AUTO_FABRIC:-0}" = 1 ] && fabric=(-u FI_PROVIDER)
	if [ "$n" -lt 1 ]; then
		_netns_log "netns_run_ranks: no namespaces (netns_setup first)"
		return 1
	fi
	if [ $# -eq 0 ]; then
		_netns_log "netns_run_ranks: no command"
		return 1
	fi
	if [ "${NETNS_FAMILY:-4}" = 6 ] && [ -z "${NETNS_IP6[0]:-}" ]; then
		_netns_log "netns_run_ranks: NETNS_FAMILY=6 but no IPv6"
		return 1
	fi
	port=${NETNS_PORT:-$((29500 + _NETNS_RUNS))}
	_NETNS_RUNS=$((_NETNS_RUNS + 1))
	root=$(netns_root_addr "$port")
	NETNS_LAST_ROOT=$root
	NETNS_RANK_RC=()

	for ((i = 0; i < n; i++)); do
		(
			timeout -k 5 "$tmo" ip netns exec \
				"${NETNS_NAMES[host_of[i]]}" \
				env "${fabric[@]}" PS_COMM_RANK="$i" \
				PS_COMM_SIZE="$n" PS_COMM_ROOT="$root" \
				"$@" </dev/null 2>&1 | sed -u "s/^/[$i] /"
			exit "${PIPESTATUS[0]}"
		) &
		pids[i]=$!
		rank_of[$!]=$i
	done

	if [ "${NETNS_FAIL_FAST:-0}" = 1 ] &&
		[ "${BASH_VERSINFO[0]}${BASH_VERSINFO[1]}" -ge 51 ]; then
		local left=$n
		local -A running=()
		for pid in "${pids[@]}"; do running[$pid]=1; done
		while [ "$left" -gt 0 ]; do
			pid=
			rc=0
			wait -n -p pid "${!running[@]}" || rc=$?
			[ -z "$pid" ] && break
			unset "running[$pid]"
			i=${rank_of[$pid]}
			NETNS_RANK_RC[i]=$rc
			left=$((left - 1))
			if [ "$rc" != 0 ] && [ -z "$killed" ] && [ "$left" -gt 0 ]; then
				killed=$i
				_netns_log "rank $i failed ($rc): stopping the other ranks"
				_netns_kill_ranks
			fi
		done
	else
		for ((i = 0; i < n; i++)); do
			rc=0
			wait "${pids[i]}" || rc=$?
			NETNS_RANK_RC[i]=$rc
		done
	fi
	# Anything a rank left behind (daemonised children) goes too.
	_netns_kill_ranks

	elapsed=$((SECONDS - start))
	for ((i = 0; i < n; i++)); do
		rc=${NETNS_RANK_RC[i]}
		[ "$rc" = 0 ] && continue
		if [ -n "$killed" ] && [ "$i" != "$killed" ] && [ "$rc" = 137 ]; then
			_netns_log "rank $i (${NETNS_NAMES[host_of[i]]}) stopped after rank $killed failed"
		elif { [ "$rc" = 124 ] || [ "$rc" = 137 ]; } &&
			[ "$elapsed" -ge $((${tmo%.*} - 1)) ]; then
			timedout=1
			_netns_log "rank $i (${NETNS_NAMES[host_of[i]]}) timed out after ${tmo}s (status $rc)"
		elif [ "$rc" -gt 128 ]; then
			_netns_log "rank $i (${NETNS_NAMES[host_of[i]]}) killed by signal $((rc - 128))"
		else
			_netns_log "rank $i (${NETNS_NAMES[host_of[i]]}) exited with status $rc"
		fi
		[ -z "$first" ] && first=$rc
	done
	[ -z "$first" ] && return 0
	for ((i = 1; i < n; i++)); do
		[ "${NETNS_RANK_RC[i]}" != "${NETNS_RANK_RC[0]}" ] && break
	done
	[ "$i" -eq "$n" ] && return "${NETNS_RANK_RC[0]}"
	[ -n "$killed" ] && return "${NETNS_RANK_RC[killed]}"
	[ "$timedout" = 1 ] && return 124
	return "$first"
}

# Kill what runs in the host namespaces (not the switch: nothing runs there).
_netns_kill_ranks() {
	local ns pids
	for ns in "${NETNS_NAMES[@]}"; do
		pids+=" $(ip netns pids "$ns" 2>/dev/null)"
	done
	pids=$(echo $pids)
	[ -n "$pids" ] && { kill -KILL $pids 2>/dev/null || true; }
	return 0
}

# ---- Fault helpers: NS is a rank index or a namespace name. ----

# netns_loss NS PERCENT: drop PERCENT% of packets arriving on eth0 of NS
# (nftables, random); 0 removes the rule.
netns_loss() {
	local ns pct=$2
	ns=$(_netns_resolve "$1") || return 1
	case $pct in '' | *[!0-9]* ) _netns_log "netns_loss: bad percent '$pct'"; return 1 ;; esac
	ip netns exec "$ns" nft delete table inet psc_fault 2>/dev/null || true
	[ "$pct" -eq 0 ] && return 0
	ip netns exec "$ns" nft -f - <<EOF
table inet psc_fault {
	chain input {
		type filter hook input priority 0; policy accept;
		iifname "eth0" numgen random mod 100 < $pct drop
	}
}
EOF
}

# netns_rate NS RATE: shape eth0 egress of NS to RATE (tc syntax: 10mbit,
# 1gbit, ...) with tbf; RATE "off" removes it. NETNS_TBF_BURST overrides
# the bucket size (default 64kb).
netns_rate() {
	local ns
	ns=$(_netns_resolve "$1") || return 1
	if [ "$2" = off ]; then
		tc -n "$ns" qdisc del dev eth0 root 2>/dev/null || true
		return 0
	fi
	tc -n "$ns" qdisc replace dev eth0 root tbf rate "$2" \
		burst "${NETNS_TBF_BURST:-64kb}" latency "${NETNS_TBF_LATENCY:-100ms}"
}

# netns_link_down NS / netns_link_up NS: unplug / replug the cable of NS
# (its switch port goes down, so eth0 loses carrier but keeps addresses).
netns_link_down() {
	local ns i
	ns=$(_netns_resolve "$1") || return 1
	i=${ns#"$NETNS_PREFIX"}
	ip -n "$NETNS_SWITCH" link set "p$i" down
}

netns_link_up() {
	local ns i
	ns=$(_netns_resolve "$1") || return 1
	i=${ns#"$NETNS_PREFIX"}
	ip -n "$NETNS_SWITCH" link set "p$i" up
}
