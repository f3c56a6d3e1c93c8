#!/bin/sh
# Bad input and misbehaving peers at bootstrap, with real processes.
#
# Every scenario starts ranks of examples/pingpong (and tests/mp/store_probe,
# a deliberately broken rendezvous client) by hand with an explicit
# environment: PS_COMM_RANK/SIZE, PS_COMM_ROOT on 127.0.0.1 and a free port,
# FI_PROVIDER=tcp unless stated, small PS_COMM_TIMEOUT and OP_TIMEOUT. Every
# process runs under timeout(1). Each scenario checks (a) the exit status:
# non-zero, or zero where the job must survive, (b) that the processes
# finished well within the bound (no hang until a timeout), and (c) that
# stderr carries a clear message. Output follows TAP loosely: one "ok" or
# "not ok" line per check; the exit status is 1 if any check failed.
#
# The single quotes around sh -c scripts are deliberate, check() calls the
# helpers below indirectly, and the $env_* and $PPARGS lists of words are
# split on purpose (their words hold no blanks).
# shellcheck disable=SC2016,SC2086,SC2317

builddir=${top_builddir:-.}
PINGPONG=$builddir/examples/pingpong
PROBE=$builddir/tests/mp/store_probe

# ok, not_ok, check and the need_ and clean_ helpers come from common.sh.
. "${srcdir:-$(dirname "$0")/../..}/tests/mp/common.sh"
need_programs "$PINGPONG" "$PROBE"
# ss (iproute2) tells when rank 0 serves the rendezvous: wait_listen.
need_commands timeout ss

# Only what each scenario sets explicitly may reach the ranks.
clean_rank_env
unset FI_PROVIDER

# Every process is killed by timeout(1) after this many seconds.
LIMIT=30

tmp=$(mktemp -d "${TMPDIR:-/tmp}/bad_input.XXXXXX") || exit 1
: >"$tmp/pids"
: >"$tmp/kill9"
cleanup() {
	# timeout(1) passes TERM on to its process group.
	while read -r p; do
		kill -TERM "$p" 2>/dev/null
	done <"$tmp/pids"
	while read -r p; do
		kill -KILL "$p" 2>/dev/null
	done <"$tmp/kill9"
	# Reap them (timeout(1) sends KILL 2 s after TERM if need be).
	wait 2>/dev/null
	[ -n "$BAD_INPUT_KEEP" ] || rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP
failed=0


now_ms() {
	echo $(($(date +%s%N) / 1000000))
}

# wait_says NAME FILE-SUFFIX STRING: wait up to 10 s for the output of a
# running process to contain STRING.
wait_says() {
	wait_until 10 grep -qF -- "$3" "$tmp/$1.$2"
}

# spawn NAME VAR=VALUE... PROG ARGS...: start PROG in the background under
# timeout with exactly these variables added; output in $tmp/NAME.out and
# $tmp/NAME.err.
spawn() {
	name=$1
	shift
	now_ms >"$tmp/$name.t0"
	timeout -k 2 "$LIMIT" env "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" &
	echo $! >"$tmp/$name.pid"
	echo $! >>"$tmp/pids"
}

# finish NAME: wait for it; its status goes to $tmp/NAME.rc and the
# milliseconds since it started to $tmp/NAME.ms.
finish() {
	wait "$(cat "$tmp/$1.pid")" 2>/dev/null
	echo $? >"$tmp/$1.rc"
	echo $(($(now_ms) - $(cat "$tmp/$1.t0"))) >"$tmp/$1.ms"
}

# Predicates on finished processes.
rc_of() { cat "$tmp/$1.rc"; }
ms_of() { cat "$tmp/$1.ms"; }
failed_with() {		# NAME: exited non-zero, not killed by timeout
	st=$(rc_of "$1")
	[ "$st" -ne 0 ] && [ "$st" -ne 124 ] && [ "$st" -ne 137 ]
}
succeeded() { [ "$(rc_of "$1")" -eq 0 ]; }
status_is() { [ "$(rc_of "$1")" -eq "$2" ]; }
within() {		# NAME MS: finished within MS milliseconds
	[ "$(ms_of "$1")" -lt "$2" ]
}
at_least() {		# NAME MS: took at least MS milliseconds
	[ "$(ms_of "$1")" -ge "$2" ]
}
says() {		# NAME FILE-SUFFIX STRING: the output contains STRING
	grep -qF -- "$3" "$tmp/$1.$2"
}
says_re() {		# NAME FILE-SUFFIX REGEX
	grep -qE -- "$3" "$tmp/$1.$2"
}
not_says() {		# NAME FILE-SUFFIX REGEX: no line matches
	! grep -qE -- "$3" "$tmp/$1.$2"
}

PPARGS="-M 64 -i 5 -w 1"
COMMON="FI_PROVIDER=tcp PS_COMM_OP_TIMEOUT=10"

# --- a: no such provider ------------------------------------------------------

spawn a FI_PROVIDER=nosuch PS_COMM_TIMEOUT=5 PS_COMM_OP_TIMEOUT=10 \
	PS_COMM_RANK=0 PS_COMM_SIZE=1 "$PINGPONG" $PPARGS
finish a
check "a: FI_PROVIDER=nosuch: fails" failed_with a
check "a: FI_PROVIDER=nosuch: fails within 5 s" within a 5000
check "a: FI_PROVIDER=nosuch: says no usable libfabric provider" \
	says a err "no usable libfabric provider for FI_PROVIDER=nosuch"
check "a: FI_PROVIDER=nosuch: lists the installed providers" \
	says_re a err "Providers installed here: .*tcp"

# --- b: nobody serves PS_COMM_ROOT --------------------------------------------

free_port
spawn b $COMMON PS_COMM_TIMEOUT=5 PS_COMM_ROOT=127.0.0.1:$port \
	PS_COMM_RANK=1 PS_COMM_SIZE=2 "$PINGPONG" $PPARGS
finish b
check "b: root unreachable: fails" failed_with b
check "b: root unreachable: fails within ~PS_COMM_TIMEOUT (< 9 s)" \
	within b 9000
check "b: root unreachable: keeps retrying until PS_COMM_TIMEOUT (>= 4 s)" \
	at_least b 4000
check "b: root unreachable: says cannot reach the rendezvous" \
	says b err "cannot reach the rendezvous at 127.0.0.1:$port"

# --- c: garbage and an oversized header while a job bootstraps ---------------

free_port
env_c="$COMMON PS_COMM_TIMEOUT=10 PS_COMM_ROOT=127.0.0.1:$port PS_COMM_SIZE=2"
spawn c0 $env_c PS_COMM_RANK=0 "$PINGPONG" $PPARGS
wait_listen "$port"
spawn cg $env_c PS_COMM_RANK=1 "$PROBE" garbage
finish cg
spawn co $env_c PS_COMM_RANK=1 "$PROBE" oversized
finish co
spawn c1 $env_c PS_COMM_RANK=1 "$PINGPONG" $PPARGS
finish c0
finish c1
check "c: garbage probe: refused and closed (status 0)" succeeded cg
# The root closes with garbage unread, so a reset may overtake its ERROR
# reply; rank 0's log below is what must name the bad magic.
check "c: garbage probe: the root closed the connection" \
	says cg out "the root closed"
check "c: oversized probe: refused and closed (status 0)" succeeded co
check "c: oversized probe: got an ERROR reply naming the size" \
	says co out "oversized message"
check "c: job survives garbage: rank 0 exits 0" succeeded c0
check "c: job survives garbage: rank 1 exits 0" succeeded c1
check "c: job survives garbage: within 15 s" within c0 15000
check "c: rank 0 logs refusing message from the probe" \
	says_re c0 err "refusing message from 127\.0\.0\.1:[0-9]+: bad magic"
check "c: rank 0 logs the oversized header" \
	says_re c0 err "refusing message from .*oversized message"

# --- d: a job of another size at the same root --------------------------------

free_port
env_d="$COMMON PS_COMM_TIMEOUT=20 PS_COMM_ROOT=127.0.0.1:$port"
spawn dA0 $env_d PS_COMM_SIZE=2 PS_COMM_RANK=0 "$PINGPONG" $PPARGS
wait_listen "$port"
spawn dB $env_d PS_COMM_SIZE=3 PS_COMM_RANK=1 "$PINGPONG" $PPARGS
finish dB
spawn dA1 $env_d PS_COMM_SIZE=2 PS_COMM_RANK=1 "$PINGPONG" $PPARGS
finish dA0
finish dA1
check "d: size-3 rank at a size-2 root: fails" failed_with dB
check "d: size-3 rank at a size-2 root: fails fast (< 4 s)" within dB 4000
check "d: size-3 rank at a size-2 root: says serves a job of 2 ranks" \
	says dB err "serves a job of 2 ranks"
check "d: job A still succeeds: rank 0 exits 0" succeeded dA0
check "d: job A still succeeds: rank 1 exits 0" succeeded dA1

# --- e: a rank killed, or exiting, mid-bootstrap ------------------------------

# e_run MODE TAG: ranks 0 and 1 of 3, then the probe as rank 2.
e_run() {
	free_port
	env_e="$COMMON PS_COMM_TIMEOUT=60 PS_COMM_ROOT=127.0.0.1:$port"
	env_e="$env_e PS_COMM_SIZE=3"
	spawn "$2"0 $env_e PS_COMM_RANK=0 "$PINGPONG" $PPARGS
	spawn "$2"1 $env_e PS_COMM_RANK=1 "$PINGPONG" $PPARGS
	wait_listen "$port"
	if [ "$1" = hello-and-hang ]; then
		spawn "$2"p $env_e PS_COMM_RANK=2 sh -c \
			'echo $$ >"$0"; echo $$ >>"$1"; exec "$2" hello-and-hang' \
			"$tmp/$2p.realpid" "$tmp/kill9" "$PROBE"
		# Killed once it has joined (it says so), not before.
		wait_until 20 has_line "$tmp/$2p.out" 'joined the rendezvous' ||
			not_ok "e: rank 2 did not join within 20 s"
		kill -KILL "$(cat "$tmp/$2p.realpid")" 2>/dev/null
	else
		spawn "$2"p $env_e PS_COMM_RANK=2 "$PROBE" hello-and-die
	fi
	finish "$2"p
	finish "$2"0
	finish "$2"1
}

e_run hello-and-hang ek
check "e: rank 2 killed by SIGKILL after joining: it did join" \
	says ekp out "joined the rendezvous"
for r in 0 1; do
	check "e: rank 2 killed: rank $r fails" failed_with ek$r
	check "e: rank 2 killed: rank $r fails fast (< 15 s, TIMEOUT 60)" \
		within ek$r 15000
	check "e: rank 2 killed: rank $r says it died during bootstrap" \
		says_re ek$r err "rank 2 .*died during bootstrap"
done

e_run hello-and-die ed
check "e: rank 2 _exit after joining: probe exits 9" status_is edp 9
for r in 0 1; do
	check "e: rank 2 _exit: rank $r fails" failed_with ed$r
	check "e: rank 2 _exit: rank $r fails fast (< 15 s, TIMEOUT 60)" \
		within ed$r 15000
	check "e: rank 2 _exit: rank $r says it died during bootstrap" \
		says_re ed$r err "rank 2 .*died during bootstrap"
done

# Rank 1 comes only once rank 0 has given up on the dead rank 2: it must
# hear why from rank 0, not wait PS_COMM_TIMEOUT for a root that is gone.
free_port
env_e="$COMMON PS_COMM_TIMEOUT=60 PS_COMM_ROOT=127.0.0.1:$port PS_COMM_SIZE=3"
spawn el0 $env_e PS_COMM_RANK=0 "$PINGPONG" $PPARGS
wait_listen "$port"
spawn elp $env_e PS_COMM_RANK=2 "$PROBE" hello-and-die
finish elp
wait_says el0 err "rendezvous aborted"
spawn el1 $env_e PS_COMM_RANK=1 "$PINGPONG" $PPARGS
finish el0
finish el1
d="e: rank 1 after rank 0 gave up on rank 2"
check "$d: probe exits 9" status_is elp 9
for r in 0 1; do
	check "$d: rank $r fails" failed_with el$r
	check "$d: rank $r fails fast (< 15 s, TIMEOUT 60)" within el$r 15000
	check "$d: rank $r says it died during bootstrap" \
		says_re el$r err "rank 2 .*died during bootstrap"
done

# Rank 2 is killed while it waits for rank 1, which has not joined yet:
# it died (long before any PS_COMM_TIMEOUT), and rank 1 is not to blame.
free_port
env_e="$COMMON PS_COMM_TIMEOUT=60 PS_COMM_ROOT=127.0.0.1:$port PS_COMM_SIZE=3"
spawn ew0 $env_e PS_COMM_RANK=0 "$PINGPONG" $PPARGS
wait_listen "$port"
spawn ewp $env_e PS_COMM_RANK=2 sh -c \
	'echo $$ >"$0"; echo $$ >>"$1"; exec "$2" hello-and-wait' \
	"$tmp/ewp.realpid" "$tmp/kill9" "$PROBE"
wait_until 20 has_line "$tmp/ewp.out" 'waiting for rank 1' ||
	not_ok "e: rank 2 did not wait for rank 1 within 20 s"
kill -KILL "$(cat "$tmp/ewp.realpid")" 2>/dev/null
finish ewp
wait_says ew0 err "rendezvous aborted"
spawn ew1 $env_e PS_COMM_RANK=1 "$PINGPONG" $PPARGS
finish ew0
finish ew1
d="e: rank 2 killed while it waits for rank 1"
for r in 0 1; do
	check "$d: rank $r fails" failed_with ew$r
	check "$d: rank $r fails fast (< 15 s, TIMEOUT 60)" within ew$r 15000
	check "$d: rank $r says rank 2 died during bootstrap" \
		says_re ew$r err "rank 2 .*died during bootstrap"
done

# --- f: settings that must agree ----------------------------------------------

free_port
env_f="PS_COMM_OP_TIMEOUT=10 PS_COMM_TIMEOUT=20 PS_COMM_ROOT=127.0.0.1:$port"
env_f="$env_f PS_COMM_SIZE=2"
spawn fd0 FI_PROVIDER=tcp $env_f PS_COMM_RANK=0 "$PINGPONG" $PPARGS
wait_listen "$port"
spawn fd1 FI_PROVIDER=tcp $env_f PS_COMM_RANK=1 PS_COMM_DETERMINISTIC=1 \
	"$PINGPONG" $PPARGS
finish fd0
finish fd1
for r in 0 1; do
	o=$((1 - r))
	check "f: PS_COMM_DETERMINISTIC differs: rank $r fails" failed_with fd$r
	check "f: PS_COMM_DETERMINISTIC differs: rank $r fails fast (< 8 s)" \
		within fd$r 8000
	check "f: PS_COMM_DETERMINISTIC differs: rank $r names rank $o" \
		says_re fd$r err "rank $o .*PS_COMM_DETERMINISTIC"
done
# Rank 0's own failed bootstrap must not be reported as a rank leaving.
check "f: PS_COMM_DETERMINISTIC differs: rank 0 does not blame rank 0" \
	not_says fd0 err "rank 0 \\(.*died during bootstrap"

free_port
env_f="PS_COMM_OP_TIMEOUT=10 PS_COMM_TIMEOUT=20 PS_COMM_ROOT=127.0.0.1:$port"
env_f="$env_f PS_COMM_SIZE=2"
spawn fp0 FI_PROVIDER=tcp $env_f PS_COMM_RANK=0 "$PINGPONG" $PPARGS
wait_listen "$port"
spawn fp1 FI_PROVIDER=udp $env_f PS_COMM_RANK=1 "$PINGPONG" $PPARGS
finish fp0
finish fp1
for r in 0 1; do
	o=$((1 - r))
	check "f: FI_PROVIDER tcp vs udp: rank $r fails" failed_with fp$r
	check "f: FI_PROVIDER tcp vs udp: rank $r fails fast (< 8 s)" \
		within fp$r 8000
	check "f: FI_PROVIDER tcp vs udp: rank $r names rank $o and the provider" \
		says_re fp$r err "rank $o .*provider .*here vs .*there"
done
check "f: FI_PROVIDER tcp vs udp: rank 0 does not blame rank 0" \
	not_says fp0 err "rank 0 \\(.*died during bootstrap"

# --- g: an interface that does not exist --------------------------------------

free_port
env_g="$COMMON PS_COMM_TIMEOUT=20 PS_COMM_ROOT=127.0.0.1:$port PS_COMM_SIZE=2"
spawn g0 $env_g PS_COMM_IFNAME=nosuchif PS_COMM_RANK=0 "$PINGPONG" $PPARGS
spawn g1 $env_g PS_COMM_IFNAME=nosuchif PS_COMM_RANK=1 "$PINGPONG" $PPARGS
finish g0
finish g1
for r in 0 1; do
	check "g: PS_COMM_IFNAME=nosuchif: rank $r fails" failed_with g$r
	check "g: PS_COMM_IFNAME=nosuchif: rank $r fails within 5 s" \
		within g$r 5000
	check "g: PS_COMM_IFNAME=nosuchif: rank $r says matches no" \
		says g$r err 'PS_COMM_IFNAME="nosuchif" matches no'
	check "g: PS_COMM_IFNAME=nosuchif: rank $r lists the interfaces" \
		says_re g$r err "interfaces here: .*lo"
done

# --- h: a rank with another job key -------------------------------------------

free_port
env_h="$COMMON PS_COMM_TIMEOUT=5 PS_COMM_ROOT=127.0.0.1:$port PS_COMM_SIZE=2"
spawn h0 $env_h PS_COMM_RANK=0 "$PINGPONG" $PPARGS
wait_listen "$port"
spawn h1 $env_h PS_COMM_RANK=1 PS_COMM_JOB_KEY=other "$PINGPONG" $PPARGS
finish h1
finish h0
check "h: foreign job key: rank 1 fails" failed_with h1
check "h: foreign job key: rank 1 fails fast (< 3 s)" within h1 3000
check "h: foreign job key: rank 1 says foreign job" says h1 err "foreign job"
check "h: foreign job key: rank 1 is told PS_COMM_JOB_KEY differs" \
	says h1 err "PS_COMM_JOB_KEY"
check "h: foreign job key: rank 0 logs the refusal" \
	says h0 err "foreign job"
check "h: foreign job key: rank 0, left alone, fails" failed_with h0
check "h: foreign job key: rank 0 fails within ~PS_COMM_TIMEOUT (< 9 s)" \
	within h0 9000

# --- i: node-aware settings ---------------------------------------------------

spawn i1 PS_COMM_INTRA=bogus PS_COMM_TIMEOUT=5 PS_COMM_RANK=0 PS_COMM_SIZE=1 \
	"$PINGPONG" $PPARGS
finish i1
check "i: PS_COMM_INTRA=bogus: fails" failed_with i1
check "i: PS_COMM_INTRA=bogus: fails within 5 s" within i1 5000
check "i: PS_COMM_INTRA=bogus: names the valid values" \
	says i1 err "PS_COMM_INTRA=bogus: use auto, shm or net"

free_port
env_i="PS_COMM_OP_TIMEOUT=10 PS_COMM_TIMEOUT=20 PS_COMM_ROOT=127.0.0.1:$port"
env_i="$env_i PS_COMM_SIZE=2"
spawn in0 $env_i PS_COMM_INTRA=shm PS_COMM_RANK=0 "$PINGPONG" $PPARGS
wait_listen "$port"
spawn in1 $env_i PS_COMM_INTRA=net PS_COMM_RANK=1 "$PINGPONG" $PPARGS
finish in0
finish in1
for r in 0 1; do
	o=$((1 - r))
	check "i: PS_COMM_INTRA shm vs net: rank $r fails" failed_with in$r
	check "i: PS_COMM_INTRA shm vs net: rank $r fails fast (< 8 s)" \
		within in$r 8000
	check "i: PS_COMM_INTRA shm vs net: rank $r names rank $o" \
		says_re in$r err "rank $o .*(PS_COMM_INTRA|provider)"
done

free_port
env_i="PS_COMM_OP_TIMEOUT=10 PS_COMM_TIMEOUT=20 PS_COMM_ROOT=127.0.0.1:$port"
env_i="$env_i PS_COMM_SIZE=2 FI_PROVIDER=shm"
spawn is0 $env_i PS_COMM_NODE_ID=a PS_COMM_RANK=0 "$PINGPONG" $PPARGS
wait_listen "$port"
spawn is1 $env_i PS_COMM_NODE_ID=b PS_COMM_RANK=1 "$PINGPONG" $PPARGS
finish is0
finish is1
for r in 0 1; do
	o=$((1 - r))
	check "i: FI_PROVIDER=shm across nodes: rank $r fails" failed_with is$r
	check "i: FI_PROVIDER=shm across nodes: rank $r fails fast (< 8 s)" \
		within is$r 8000
	check "i: FI_PROVIDER=shm across nodes: rank $r names rank $o" \
		says_re is$r err "rank $o .*is on another node"
done

free_port
env_i="PS_COMM_OP_TIMEOUT=10 PS_COMM_TIMEOUT=20 PS_COMM_ROOT=127.0.0.1:$port"
env_i="$env_i PS_COMM_SIZE=2 FI_PROVIDER=tcp PS_COMM_INTRA=shm"
spawn it0 $env_i PS_COMM_RANK=0 "$PINGPONG" $PPARGS
wait_listen "$port"
spawn it1 $env_i PS_COMM_RANK=1 "$PINGPONG" $PPARGS
finish it0
finish it1
check "i: FI_PROVIDER=tcp with PS_COMM_INTRA=shm: runs" succeeded it0
check "i: FI_PROVIDER=tcp with PS_COMM_INTRA=shm: warns it uses tcp" \
	says it0 err "PS_COMM_INTRA=shm ignored: FI_PROVIDER=tcp"

spawn ib PS_COMM_BIND=bogus PS_COMM_TIMEOUT=5 PS_COMM_RANK=0 PS_COMM_SIZE=1 \
	"$PINGPONG" $PPARGS
finish ib
check "i: PS_COMM_BIND=bogus: fails" failed_with ib
check "i: PS_COMM_BIND=bogus: fails within 5 s" within ib 5000
check "i: PS_COMM_BIND=bogus: names the valid values" \
	says_re ib err "PS_COMM_BIND.*bogus.*none, core or numa"

# More ranks than cores with core binding: a warning naming the fallback.
ncpu=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
spawn ic PS_COMM_BIND=core PS_COMM_TIMEOUT=60 PS_COMM_OP_TIMEOUT=30 \
	"$builddir/tools/ps_comm_run" -n $((ncpu + 1)) -- "$PINGPONG" $PPARGS
finish ic
check "i: core binding with $((ncpu + 1)) ranks on $ncpu cores: runs" \
	succeeded ic
check "i: core binding with too many ranks: warns what it did instead" \
	says_re ic err "core binding: $((ncpu + 1)) node-local ranks but $ncpu cores; bound to NUMA nodes instead"

# --- j: values that cannot be, refused at init ---------------------------------

# Each fails ps_comm_init with PS_COMM_ERR_CONFIG (its strerror text in
# pingpong's one-line error) before anything opens, naming the variable.
j=0
for setting in PS_COMM_SIZE=0 PS_COMM_RANK=-2 PS_COMM_BOOTSTRAP=bogus \
	PS_COMM_OP_TIMEOUT=-1 PS_COMM_PEER_TIMEOUT=99999999999999999999 \
	PS_COMM_TIMEOUT=1e7 PS_COMM_SPIN_US=1e9 PS_COMM_BARRIER_ALGO=abc \
	PS_COMM_BCAST_ALGO=abc PS_COMM_REDUCE_ALGO=abc \
	PS_COMM_ALLREDUCE_ALGO=abc PS_COMM_ALLGATHER_ALGO=abc \
	PS_COMM_REDUCE_SCATTER_ALGO=abc; do
	j=$((j + 1))
	spawn j$j PS_COMM_TIMEOUT=5 PS_COMM_RANK=0 PS_COMM_SIZE=1 "$setting" \
		"$PINGPONG" $PPARGS
	finish j$j
	check "j: $setting: fails" failed_with j$j
	check "j: $setting: fails within 5 s" within j$j 5000
	check "j: $setting: fails with PS_COMM_ERR_CONFIG" \
		says j$j err "ps_comm_init: invalid configuration or environment variable"
	check "j: $setting: names the variable" says j$j err "${setting%%=*}"
done

# A size with no rank is not a job of one rank.
spawn js PS_COMM_TIMEOUT=5 PS_COMM_SIZE=2 "$PINGPONG" $PPARGS
finish js
check "j: PS_COMM_SIZE=2 without a rank: fails with PS_COMM_ERR_CONFIG" \
	says js err "ps_comm_init: invalid configuration or environment variable"
check "j: PS_COMM_SIZE=2 without a rank: names PS_COMM_RANK" \
	says js err "PS_COMM_RANK"

# An unknown backend on one rank of two: that rank fails at once.
free_port
env_j="$COMMON PS_COMM_TIMEOUT=5 PS_COMM_ROOT=127.0.0.1:$port PS_COMM_SIZE=2"
spawn jb0 $env_j PS_COMM_RANK=0 "$PINGPONG" $PPARGS
spawn jb1 $env_j PS_COMM_RANK=1 PS_COMM_BOOTSTRAP=bogus "$PINGPONG" $PPARGS
finish jb1
finish jb0
check "j: PS_COMM_BOOTSTRAP=bogus on rank 1: fails" failed_with jb1
check "j: PS_COMM_BOOTSTRAP=bogus on rank 1: fails fast (< 3 s)" \
	within jb1 3000
check "j: PS_COMM_BOOTSTRAP=bogus on rank 1: fails with PS_COMM_ERR_CONFIG" \
	says jb1 err "ps_comm_init: invalid configuration or environment variable"
check "j: PS_COMM_BOOTSTRAP=bogus on rank 1: names the values allowed" \
	says jb1 err 'PS_COMM_BOOTSTRAP="bogus" is not a rendezvous: use auto, tcp, file:DIR, pmix or pmi2'
check "j: PS_COMM_BOOTSTRAP=bogus on rank 1: rank 0, left alone, fails" \
	failed_with jb0

exit $failed
