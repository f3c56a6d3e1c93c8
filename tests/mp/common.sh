# Shared helpers for the multi-process test scripts: locate the build
# tree's programs, report results in TAP-like lines, and run a program
# under ps_comm_run with a timeout. Sourced, never run.

top_builddir=${top_builddir:-.}
RUN=${PS_COMM_RUN:-$top_builddir/tools/ps_comm_run}
failures=0
passes=0
skips=0

ok() { echo "ok - $*"; passes=$((passes + 1)); }
not_ok() { echo "not ok - $*"; failures=$((failures + 1)); failed=1; }

# check DESCRIPTION COMMAND...: run COMMAND, report whether it succeeded.
check() {
	desc=$1
	shift
	if "$@"; then
		ok "$desc"
	else
		not_ok "$desc"
	fi
}
skip() { echo "ok - $* # SKIP"; skips=$((skips + 1)); }

# free_port: set `port` to a TCP port no socket uses (in any state), a
# different one per call. Ports come from below the kernel's ephemeral
# range, so no socket connecting out (a provider's, another test's) can be
# given one before the test's server binds it.
_port_hi=$(($(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null ||
	echo 32768) - 1))
_port_lo=10000
if [ "$_port_hi" -lt $((_port_lo + 1000)) ]; then
	_port_lo=20000 _port_hi=60000
fi
_port_next=$((_port_lo + $$ % (_port_hi - _port_lo)))
free_port() {
	while :; do
		_port_next=$((_port_next + 1))
		[ "$_port_next" -gt "$_port_hi" ] && _port_next=$_port_lo
		if ! command -v ss >/dev/null 2>&1 ||
			[ -z "$(ss -Htan "sport = :$_port_next" 2>/dev/null)" ]; then
			port=$_port_next
			return
		fi
	done
}

# wait_until SECS COMMAND...: run COMMAND every 0.05 s until it succeeds
# (status 0), or until SECS seconds have passed (status 1). Tests wait so
# for the event they test (a file, a line in it, a listening port, a
# pid's state), never for a fixed time; SECS is a deadline, generous on
# a loaded machine, whose passing means the event never came.
wait_until() {
	_wu_end=$(($(date +%s) + $1 + 1))
	shift
	until "$@"; do
		[ "$(date +%s)" -lt "$_wu_end" ] || return 1
		sleep 0.05
	done
}

# listening PORT: something listens on TCP PORT. ss is from iproute2
# (tools/install-deps); a script that calls this says need_commands ss.
listening() {
	[ -n "$(ss -Htln "sport = :$1" 2>/dev/null)" ]
}

# wait_listen PORT [SECS]: wait, 30 s unless told, until something
# listens on TCP PORT; if nothing does, a "not ok" line says so and the
# status is 1.
wait_listen() {
	wait_until "${2:-30}" listening "$1" && return 0
	not_ok "nothing listens on port $1 after ${2:-30} s"
	return 1
}

# has_line FILE REGEX: a line of FILE matches REGEX (grep -E).
has_line() {
	grep -Eq "$2" "$1" 2>/dev/null
}

# need_programs FILE...: each must be an executable of the build, or the
# script fails (exit 1) naming it.
need_programs() {
	for _b; do
		if [ ! -x "$_b" ]; then
			echo "not ok - $_b not found or not executable"
			exit 1
		fi
	done
}

# need_commands CMD...: each must be on PATH, or the script is skipped
# (exit 77) naming it.
need_commands() {
	for _c; do
		if ! command -v "$_c" >/dev/null 2>&1; then
			echo "skip - $_c is not installed"
			exit 77
		fi
	done
}

# clean_rank_env: unset every variable that steers a rank's bootstrap,
# so that only what a scenario sets reaches its ranks.
clean_rank_env() {
	unset PS_COMM_RANK PS_COMM_SIZE PS_COMM_ROOT PS_COMM_BOOTSTRAP \
		PS_COMM_JOIN PS_COMM_GROW_ROOT \
		PS_COMM_TIMEOUT PS_COMM_OP_TIMEOUT PS_COMM_IFNAME \
		PS_COMM_PORT_RANGE PS_COMM_JOB_KEY PS_COMM_JOB_KEY_FILE \
		PS_COMM_DETERMINISTIC PS_COMM_LOG_FILE PS_COMM_LOG_LEVEL \
		MASTER_ADDR MASTER_PORT OMPI_COMM_WORLD_RANK \
		OMPI_COMM_WORLD_SIZE PMIX_RANK PMI_RANK PMI_SIZE SLURM_PROCID \
		SLURM_NTASKS RANK WORLD_SIZE
}

# scratch_with_pids NAME KEEPVAR: tmp becomes a new scratch directory
# (NAME.XXXXXX) holding an empty list, $tmp/pids. At exit every pid the
# script wrote there is killed (KILL) and reaped, and tmp is removed
# unless the variable named KEEPVAR is set; INT, TERM and HUP exit 1.
scratch_with_pids() {
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX") || exit 1
	_swp_keep=$2
	: >"$tmp/pids"
	trap _swp_cleanup EXIT
	trap 'exit 1' INT TERM HUP
}
_swp_cleanup() {
	while read -r _swp_p; do
		kill -KILL "$_swp_p" 2>/dev/null
	done <"$tmp/pids"
	wait 2>/dev/null
	eval "_swp_k=\${$_swp_keep:-}"
	[ -n "$_swp_k" ] || rm -rf "$tmp"
}

# The providers of the libfabric pscomm runs on, one per line, as
# ps_comm_info lists them ("tcp;ofi_rxm"), without those it reports
# missing; computed once.
_present=
present_providers() {
	[ -n "$_present" ] ||
		_present=$("$top_builddir/tools/ps_comm_info" 2>/dev/null |
			awk '/^libfabric providers/ {on = 1; next}
			     on && /^$/ {exit}
			     on && /^  [^ ]/ && $2 != "missing:" {print $1}')
	echo "$_present"
}

# fab NAME: the FI_PROVIDER value for what the suites call NAME on this
# libfabric. Up to 1.17, "tcp" is tcp;ofi_rxm and "net" the native RDM
# over TCP. From 1.18 net is gone and its code is the tcp provider's own
# RDM entries ("tcp", which FI_PROVIDER=tcp selects first), so "net"
# means "tcp" and "tcp" means "tcp;ofi_rxm": each row keeps testing the
# same code under its new name.
fab() {
	if present_providers | grep -qx tcp; then
		case $1 in
		net) echo tcp; return ;;
		tcp) echo "tcp;ofi_rxm"; return ;;
		esac
	fi
	echo "$1"
}

# Does the provider exist for the libfabric pscomm runs on (ps_comm_info
# lists it: NAME or a layering over it)? The only question whose "no"
# makes a check a skip: a provider that exists but fails is a failure.
have_provider() {
	present_providers | awk -v p="$(fab "$1")" \
		'$1 == p || index($1, p ";") == 1 {f = 1} END {exit !f}'
}

# absent NAME PROVIDER: when PROVIDER (not a nodes:P layout) does not
# exist here, report NAME skipped and succeed.
absent() {
	case $2 in nodes:*) return 1 ;; esac
	have_provider "$2" && return 1
	skip "$1: provider $2 not present"
	return 0
}

# launch_ranks N PROVIDER OPTS PROG [ARGS...]: run PROG on N ranks under
# the launcher with its options OPTS (words: "--timeout 60"), on
# PROVIDER; a PROVIDER of nodes:P runs node-aware instead: FI_PROVIDER
# unset, and the ranks split into nodes of P (tests/mp/node_id.sh), so
# shm serves inside a node and tcp between them. The launcher's status.
launch_ranks() {
	_lr_n=$1 _lr_p=$2 _lr_opts=$3
	shift 3
	case $_lr_p in
	nodes:*)
		# shellcheck disable=SC2086
		(unset FI_PROVIDER; PSC_TEST_PPN=${_lr_p#nodes:} \
			"$RUN" -n "$_lr_n" $_lr_opts -- \
			"${srcdir:-.}/tests/mp/node_id.sh" "$@") ;;
	*)
		# shellcheck disable=SC2086
		"$RUN" -n "$_lr_n" --provider "$(fab "$_lr_p")" $_lr_opts -- \
			"$@" ;;
	esac
}

# run_ranks NAME N PROVIDER TIMEOUT PROG [ARGS...]: one check, run by
# launch_ranks. Its variables are _rr_-prefixed: sh has no locals, and
# callers loop over prov, name and n themselves.
run_ranks() {
	_rr_name=$1 _rr_n=$2 _rr_prov=$3 _rr_tmo=$4
	shift 4
	absent "$_rr_name" "$_rr_prov" && return
	log=$(mktemp)
	start=$(date +%s)
	launch_ranks "$_rr_n" "$_rr_prov" "--timeout $_rr_tmo" "$@" \
		>"$log" 2>&1
	rc=$?
	secs=$(($(date +%s) - start))
	# Absence was decided above: a provider fi_info lists that fails
	# (to open, too) fails the check, whatever its status.
	case $_rr_prov in
	nodes:*) ;;
	*) [ "$(fab "$_rr_prov")" = "$_rr_prov" ] ||
		_rr_prov="$_rr_prov as $(fab "$_rr_prov")" ;;
	esac
	if [ $rc -eq 0 ]; then
		ok "$_rr_name ($_rr_n ranks, $_rr_prov, ${secs}s)"
	else
		not_ok "$_rr_name ($_rr_n ranks, $_rr_prov): exit $rc after ${secs}s"
		sed 's/^/#   /' "$log" | tail -20
	fi
	rm -f "$log"
}

# --- Launcher tests: the caller sets tmp to a scratch directory. ----------

# lines_at_least FILE N: FILE has N lines or more.
lines_at_least() {
	[ "$(wc -l 2>/dev/null <"$1" || echo 0)" -ge "$2" ]
}

# wait_lines FILE N: wait up to 10 s until FILE has N lines (ranks wrote
# their pids); status 1 if it never does.
wait_lines() {
	wait_until 10 lines_at_least "$1" "$2"
}

# launcher_scratch NAME: make $tmp, removed at exit, for a launcher test.
launcher_scratch() {
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX") || exit 1
	trap 'rm -rf "$tmp"' EXIT
	trap 'exit 1' INT TERM HUP
	failed=0
}

# run ARGS...: run the launcher, keeping its status in $rc, its output in
# $tmp/out and $tmp/err and its duration in seconds (with a fraction) in
# $secs.
# shellcheck disable=SC2154
run() {
	t0=$(date +%s.%N)
	"$RUN" "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')
}

# under S: the last run took less than S seconds.
under() {
	awk -v s="$secs" -v lim="$1" 'BEGIN { exit !(s < lim) }'
}

# quick: the last run did not wait for a sleeping rank, which would take
# 30 s or more.  The bound leaves room for the 3 s default grace period
# and for a machine loaded by other tests.
quick() {
	under 15
}

# status_quick CODE: the last run ended with CODE, quickly.
status_quick() {
	[ "$rc" -eq "$1" ] && quick
}

# alive PID: PID runs.  Zombies count as dead: in containers whose init does
# not reap, an orphan killed with its rank can stay a zombie for good.
alive() {
	kill -0 "$1" 2>/dev/null || return 1
	if [ -r "/proc/$1/stat" ]; then
		st=$(sed 's/.*) \(.\).*/\1/' "/proc/$1/stat" 2>/dev/null)
	else
		st=$(ps -o stat= -p "$1" 2>/dev/null)
	fi
	case $st in
	Z*) return 1 ;;
	esac
	return 0
}

# gone PIDFILE: none of the processes listed in PIDFILE runs within a second;
# grandchildren die along with their rank, but not necessarily before it.
gone() {
	[ -s "$1" ] || return 1
	while read -r p; do
		n=0
		while alive "$p"; do
			[ "$n" -ge 10 ] && return 1
			sleep 0.1
			n=$((n + 1))
		done
	done <"$1"
	return 0
}

# shm_files_of STAMP PID...: the files in /dev/shm that processes PID
# made after file STAMP was touched and left: shm's queues
# ("PID:DOMAIN:EP") and pscomm's rings ("psc-ring-PID-K"); an older file
# of the same name belongs to an earlier process with that pid. Prints
# their names, nothing when none is left.
shm_files_of() {
	_sf_stamp=$1
	shift
	for _sf_p in "$@"; do
		find /dev/shm -maxdepth 1 -newer "$_sf_stamp" \
			\( -name "$_sf_p:*" -o -name "psc-ring-$_sf_p-*" \) \
			-printf '%f\n' 2>/dev/null
	done
}

# finish: the exit status automake expects.
finish() {
	echo "# $passes passed, $failures failed, $skips skipped"
	[ $failures -eq 0 ] || exit 1
	[ $passes -gt 0 ] || exit 77
	exit 0
}
