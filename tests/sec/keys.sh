#!/bin/sh
# Job keys without effort (doc/security.md), with real processes:
#
#   a  PS_COMM_JOB_KEY_FILE at mode 0600: the job completes, and the key
#      shows nowhere in its output, even at PS_COMM_LOG_LEVEL=debug
#   b  the same file at 0644: every rank fails at once, saying chmod 600,
#      without quoting the key
#   c  ps_comm_run gives its ranks a key when none is set (each job its
#      own), and keeps one that is set
#   d  a rank with another key: both sides name PS_COMM_JOB_KEY
#   e  a job across hosts (rank 1 in a UTS namespace with another host
#      name; root only) warns at rank 0 without a key, and not with one
#   f  ps_comm_info -p never shows the key
#
# Exit 1 when a check fails, 77 when a tool is missing.
# shellcheck disable=SC2086 # env lists are split into words on purpose

builddir=${top_builddir:-.}
PINGPONG=$builddir/examples/pingpong
RUNNER=$builddir/tools/ps_comm_run
INFO=$builddir/tools/ps_comm_info

# ok, not_ok, check and the need_ and clean_ helpers come from common.sh.
. "${srcdir:-$(dirname "$0")/../..}/tests/mp/common.sh"
need_programs "$PINGPONG" "$RUNNER" "$INFO"
need_commands timeout

# Only what each scenario sets explicitly may reach the ranks.
clean_rank_env

tmp=$(mktemp -d "${TMPDIR:-/tmp}/sec_keys.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM HUP
failed=0


PPARGS="-M 64 -i 5 -w 1"
BASE="FI_PROVIDER=tcp PS_COMM_OP_TIMEOUT=10 PS_COMM_TIMEOUT=15 PS_COMM_SIZE=2"
SECRET="keys-sh-$$-secret"

# job TAG ENV...: ranks 0 and 1 of pingpong with ENV; sets rc0 and rc1.
# RANK1_PREFIX, if set, is a command rank 1 runs under.
job() {
	tag=$1
	shift
	free_port
	env "$@" PS_COMM_ROOT=127.0.0.1:$port PS_COMM_RANK=0 timeout 30 \
		"$PINGPONG" $PPARGS >"$tmp/$tag.0.out" 2>"$tmp/$tag.0.err" &
	p0=$!
	env "$@" PS_COMM_ROOT=127.0.0.1:$port PS_COMM_RANK=1 $RANK1_PREFIX \
		timeout 30 "$PINGPONG" $PPARGS >"$tmp/$tag.1.out" \
		2>"$tmp/$tag.1.err" &
	p1=$!
	wait "$p0"
	rc0=$?
	wait "$p1"
	rc1=$?
}

says() { grep -q -- "$2" "$tmp/$1" 2>/dev/null; }
both_ok() { [ "$rc0" -eq 0 ] && [ "$rc1" -eq 0 ]; }
one_key() {
	[ "$(wc -l <"$tmp/c1")" -eq 2 ] && [ "$(sort -u "$tmp/c1" | wc -l)" -eq 1 ]
}
nowhere() { ! grep -rq -- "$1" "$tmp"/*.out "$tmp"/*.err 2>/dev/null; }

# --- a, b: the key file -------------------------------------------------------
printf '%s\n' "$SECRET" >"$tmp/key"
chmod 600 "$tmp/key"
job a $BASE PS_COMM_LOG_LEVEL=debug PS_COMM_JOB_KEY_FILE="$tmp/key"
check "a: a job with PS_COMM_JOB_KEY_FILE (0600) completes" both_ok
check "a: the key shows nowhere in its output, even at debug level" \
	nowhere "$SECRET"

chmod 644 "$tmp/key"
job b $BASE PS_COMM_JOB_KEY_FILE="$tmp/key"
check "b: a world-readable key file: rank 0 fails" [ "$rc0" -ne 0 ]
check "b: a world-readable key file: rank 1 fails" [ "$rc1" -ne 0 ]
check "b: the message says chmod 600" says b.0.err "chmod 600"
check "b: the message does not quote the key" nowhere "$SECRET"
chmod 600 "$tmp/key"

# --- c: ps_comm_run makes keys ------------------------------------------------
# shellcheck disable=SC2016 # the ranks expand it
show='printf "%s\n" "${PS_COMM_JOB_KEY:-none}"'
"$RUNNER" -n 2 -- sh -c "$show" >"$tmp/c1" 2>&1
"$RUNNER" -n 1 -- sh -c "$show" >"$tmp/c2" 2>&1
PS_COMM_JOB_KEY=mine "$RUNNER" -n 1 -- sh -c "$show" >"$tmp/c3" 2>&1
PS_COMM_JOB_KEY_FILE="$tmp/key" "$RUNNER" -n 1 -- sh -c "$show" >"$tmp/c4" 2>&1
k1=$(sort -u "$tmp/c1")
k2=$(cat "$tmp/c2")
check "c: ps_comm_run gives both ranks the same key" one_key
check "c: the key is pscomm's random form: a prefix and 64 hex digits" \
	eval 'printf "%s" "$k1" | grep -Eqx "pscomm-random-256:[0-9a-f]{64}"'
check "c: another job gets another key" [ "$k1" != "$k2" ]
check "c: a key that is set is kept" [ "$(cat "$tmp/c3")" = mine ]
check "c: a key file that is set is kept (no key made)" [ "$(cat "$tmp/c4")" = none ]
run_job() {
	"$RUNNER" -n 2 --timeout 30 -- "$PINGPONG" $PPARGS >"$tmp/c5.out" 2>&1
}
check "c: a job under ps_comm_run (its key) completes" run_job

# --- d: a rank with another key -----------------------------------------------
free_port
env $BASE PS_COMM_TIMEOUT=4 PS_COMM_ROOT=127.0.0.1:$port PS_COMM_RANK=0 \
	PS_COMM_JOB_KEY=one timeout 30 "$PINGPONG" $PPARGS \
	>"$tmp/d.0.out" 2>"$tmp/d.0.err" &
p0=$!
env $BASE PS_COMM_TIMEOUT=4 PS_COMM_ROOT=127.0.0.1:$port PS_COMM_RANK=1 \
	PS_COMM_JOB_KEY=two timeout 30 "$PINGPONG" $PPARGS \
	>"$tmp/d.1.out" 2>"$tmp/d.1.err"
rc1=$?
wait "$p0"
rc0=$?
check "d: another key: rank 1 fails" [ "$rc1" -ne 0 ]
check "d: another key: rank 1 names PS_COMM_JOB_KEY" says d.1.err PS_COMM_JOB_KEY
check "d: another key: rank 0 logs the handshake that failed" \
	says d.0.err PS_COMM_JOB_KEY

# --- e: the warning for a job across hosts without a key ----------------------
if [ "$(id -u)" -eq 0 ] && unshare -u true 2>/dev/null; then
	# Rank 1 on "another host": its own UTS namespace and host name.
	cat >"$tmp/other-host" <<'EOF'
#!/bin/sh
hostname pscomm-other-host && exec "$@"
EOF
	chmod +x "$tmp/other-host"
	RANK1_PREFIX="unshare -u $tmp/other-host"
	job e1 $BASE
	check "e: across hosts without a key: the job completes" both_ok
	check "e: across hosts without a key: rank 0 warns, saying how to set one" \
		says e1.0.err "has no PS_COMM_JOB_KEY"
	job e2 $BASE PS_COMM_JOB_KEY_FILE="$tmp/key"
	check "e: across hosts with a key: no warning" eval '! says e2.0.err "has no PS_COMM_JOB_KEY"'
	RANK1_PREFIX=
	job e3 $BASE
	check "e: one host without a key: no warning" eval '! says e3.0.err "has no PS_COMM_JOB_KEY"'
else
	skip "e: the warning across hosts (needs root and unshare -u)"
fi

# --- f: ps_comm_info ----------------------------------------------------------
PS_COMM_JOB_KEY_FILE="$tmp/key" "$INFO" -p >"$tmp/f.out" 2>&1
check "f: ps_comm_info -p with a key file: the key is hidden" \
	eval '! grep -q -- "$SECRET" "$tmp/f.out" && grep -q "(hidden)" "$tmp/f.out"'
PS_COMM_JOB_KEY=$SECRET "$INFO" -p >"$tmp/f2.out" 2>&1
check "f: ps_comm_info -p with a key: the key is hidden" \
	eval '! grep -q -- "$SECRET" "$tmp/f2.out"'

exit $failed
