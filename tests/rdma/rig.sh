# tests/rdma/rig.sh: two virtual machines with real kernel RDMA devices
# (soft-RoCE rxe or soft-iWARP siw), for running pscomm over verbs on a
# machine without RDMA hardware.  Source it from bash:
#
#	. tests/rdma/rig.sh
#	rig_require			# exit 77 with SKIP: reason when unusable
#	rig_prepare			# kernel, modules, siw.ko, initramfs (cached)
#	rig_boot rxe			# guests 0 and 1, device rxe0 on each eth0
#	rig_run 0 60 'ibv_devices'	# run a command in guest 0, 60 s at most
#	rig_shutdown			# also trapped on exit
#
# Each guest runs Debian's own kernel (downloaded as a package and
# unpacked, never installed) under qemu's software emulation, with the
# host's root file system mounted read-only over virtio-9p under a tmpfs
# overlay: the guests run this machine's libfabric, rdma-core and pscomm
# build as they are.  A second, writable 9p share per guest carries the
# commands the host gives it and their output.  The guests are joined by
# one virtual wire, a pair of UDP sockets on the host's loopback, which
# nothing else uses; rig_wire_down drops it with nftables on those two
# ports only.  README.md beside this file says more.
#
# Variables read (all optional):
#	RIG_CACHE	where prepared kernels are kept
#			(default ${XDG_CACHE_HOME:-$HOME/.cache}/pscomm-rdma)
#	RIG_MEM		MiB per guest (default 1024)
#	RIG_BOOT_TIMEOUT seconds a guest may take to boot (default 180)
#	RIG_KEEP	1: keep the scratch directory (consoles, outputs)
#	RIG_NIC		the guests' NIC model on the wire (default e1000).
#			Under load the guest's virtio-net driver sometimes
#			stopped its transmit queue for good (NETDEV
#			WATCHDOG) though qemu had taken every buffer, on siw
#			(2 dead wires in 40 jobs; none in 28 with e1000) and
#			on rxe (a CI rehearsal: the guest's qemu received
#			the other's ARP requests and sent nothing back)
#	RIG_UDPBUF	0: leave the wire's sockets at the default buffer size
#			(udpbuf.c), to see what a lossier wire does
# Variables set:
#	RIG_IP[i]	guest i's address on the wire (10.77.0.1, 10.77.0.2)
#	RIG_DEV		rxe or siw, after rig_boot
#	RIG_DIR		scratch directory: g0/ and g1/ are the guests' own
#			shares (/rig in the guest), shared/ the one both
#			mount at /rig-shared
#	RIG_KVER	the guest kernel's version

RIG_CACHE=${RIG_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pscomm-rdma}
RIG_MEM=${RIG_MEM:-1024}
RIG_BOOT_TIMEOUT=${RIG_BOOT_TIMEOUT:-180}
RIG_NIC=${RIG_NIC:-}
RIG_IP=(10.77.0.1 10.77.0.2)
RIG_DEV=
RIG_DIR=
RIG_KVER=
RIG_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
_RIG_PIDS=()
_RIG_NFT=
_RIG_SEQ=0

_rig_log() { echo "rig: $*" >&2; }

# The guest kernel's version: that of the newest linux-headers-*-amd64
# installed (siw.ko is built against them, so the two must match).
_rig_kver() {
	local d v=
	for d in /usr/src/linux-headers-*-amd64; do
		[ -f "$d/Module.symvers" ] || continue
		v=${d#/usr/src/linux-headers-}
	done
	echo "$v"
}

# rig_require: exit 77 with "SKIP: reason" unless everything the rig needs
# is here: bash, qemu-system-x86_64, busybox (static), kmod, cpio, the
# kernel headers and source to build siw, and rdma-core in the host tree
# (the guests use it).  The kernel image itself is downloaded by
# rig_prepare; if that fails the rig skips too.
rig_require() {
	local reason= c
	for c in qemu-system-x86_64 cpio depmod modprobe timeout rdma; do
		command -v "$c" >/dev/null 2>&1 ||
			{ reason="'$c' not found"; break; }
	done
	if [ -z "$reason" ]; then
		if [ ! -x /bin/busybox ]; then
			reason="/bin/busybox not found (busybox-static)"
		elif ! LC_ALL=C ldd /bin/busybox 2>&1 | grep -q 'not a dynamic'; then
			reason="/bin/busybox is not static (busybox-static)"
		fi
	fi
	if [ -z "$reason" ]; then
		RIG_KVER=$(_rig_kver)
		if [ -z "$RIG_KVER" ]; then
			reason="no linux-headers-*-amd64 installed"
		elif ! ls /usr/src/linux-source-*.tar.xz >/dev/null 2>&1; then
			reason="no linux-source-*.tar.xz in /usr/src"
		elif ! ls /usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav*.so \
			>/dev/null 2>&1; then
			reason="rdma-core's rxe provider not installed (ibverbs-providers)"
		fi
	fi
	if [ -n "$reason" ]; then
		echo "SKIP: $reason (tools/install-deps --rdma installs what the RDMA rig needs)"
		exit 77
	fi
}

# rig_prepare: make $RIG_CACHE/$RIG_KVER/{vmlinuz,modules/,initrd} unless
# they are there already: download and unpack Debian's unsigned kernel
# image package of the headers' version, build siw.ko out of tree from
# linux-source, run depmod, and pack a busybox initramfs with the modules
# needed to reach the 9p root.  Exits 77 (skip) when the kernel package
# cannot be downloaded; fails (returns 1) on any other error.
rig_prepare() {
	local c=$RIG_CACHE/$RIG_KVER tmp deb mods src
	[ -n "$RIG_KVER" ] || RIG_KVER=$(_rig_kver)
	c=$RIG_CACHE/$RIG_KVER
	if [ -f "$c/ready" ]; then
		# A changed /init or module list needs only a new initramfs.
		[ "$RIG_SRC/guest-init" -nt "$c/initrd" ] ||
			[ "$RIG_SRC/rig.sh" -nt "$c/initrd" ] || return 0
		_rig_initrd "$c"
		return
	fi
	_rig_log "preparing guest kernel $RIG_KVER in $c"
	rm -rf "$c" && mkdir -p "$c" || return 1
	tmp=$c/tmp
	mkdir -p "$tmp"
	if ! (cd "$tmp" && apt-get download \
		"linux-image-$RIG_KVER-unsigned" >"$tmp/download.log" 2>&1); then
		cat "$tmp/download.log" >&2
		echo "SKIP: cannot download linux-image-$RIG_KVER-unsigned"
		exit 77
	fi
	deb=$(ls "$tmp"/linux-image-*.deb)
	dpkg-deb -x "$deb" "$tmp/root" || return 1
	cp "$tmp/root/boot/vmlinuz-$RIG_KVER" "$c/vmlinuz" || return 1
	mkdir -p "$c/modules/lib/modules"
	mv "$tmp/root/lib/modules/$RIG_KVER" "$c/modules/lib/modules/" ||
		return 1
	mods=$c/modules/lib/modules/$RIG_KVER

	# siw: not built in Debian's kernels; its source is in linux-source.
	src=$(ls /usr/src/linux-source-*.tar.xz | tail -1)
	tar -xJf "$src" -C "$tmp" --wildcards \
		'linux-source-*/drivers/infiniband/sw/siw/*' || return 1
	if ! make -C "/usr/src/linux-headers-$RIG_KVER" \
		M="$(echo "$tmp"/linux-source-*/drivers/infiniband/sw/siw)" \
		CONFIG_RDMA_SIW=m modules >"$tmp/siw.log" 2>&1; then
		tail -20 "$tmp/siw.log" >&2
		_rig_log "building siw.ko failed"
		return 1
	fi
	mkdir -p "$mods/updates"
	cp "$tmp"/linux-source-*/drivers/infiniband/sw/siw/siw.ko \
		"$mods/updates/" || return 1
	depmod -b "$c/modules" "$RIG_KVER" || return 1

	_rig_initrd "$c" || return 1
	rm -rf "$tmp"
	touch "$c/ready"
}

# _rig_initrd CACHE: the initramfs: static busybox, /init, and the modules
# (in load order) for virtio PCI and net, 9p over virtio, and overlayfs.
_rig_initrd() {
	local c=$1 ir=$1/initrd.d m line
	rm -rf "$ir"
	mkdir -p "$ir/bin" "$ir/mods" "$ir/proc" "$ir/sys" "$ir/dev" || return 1
	cp /bin/busybox "$ir/bin/busybox" || return 1
	ln -s busybox "$ir/bin/sh"
	: >"$ir/mods/order"
	for m in virtio_pci virtio_net e1000 9pnet_virtio 9p overlay; do
		modprobe -d "$c/modules" -S "$RIG_KVER" --show-depends "$m" |
			while read -r line; do
				case $line in
				insmod\ *) ;;
				*) continue ;;
				esac
				line=${line#insmod }
				line=${line%% *}
				base=$(basename "$line")
				grep -qx "$base" "$ir/mods/order" && continue
				cp "$line" "$ir/mods/" || exit 1
				echo "$base" >>"$ir/mods/order"
			done || return 1
	done
	# Compressed modules (.ko.xz) are unpacked: busybox insmod may not
	# read them.
	for m in "$ir"/mods/*.ko.xz; do
		[ -e "$m" ] || break
		xz -d "$m" || return 1
	done
	sed -i 's/\.ko\.xz$/.ko/' "$ir/mods/order"
	cp "$RIG_SRC/guest-init" "$ir/init" && chmod 755 "$ir/init" || return 1
	(cd "$ir" && find . | cpio -o -H newc --quiet | gzip -1) \
		>"$c/initrd" || return 1
	rm -rf "$ir"
}

# rig_boot DEV: boot guests 0 and 1 with an RDMA device of type DEV (rxe or
# siw) on their eth0, and wait until both report their device active.
# Fails (returns 1) when a guest does not come up in RIG_BOOT_TIMEOUT
# seconds, showing the end of its console.
rig_boot() {
	local dev=$1 i base nic c=$RIG_CACHE/$RIG_KVER
	case $dev in rxe | siw) ;; *) _rig_log "rig_boot: rxe or siw"; return 1 ;; esac
	[ -n "$RIG_KVER" ] || RIG_KVER=$(_rig_kver)
	c=$RIG_CACHE/$RIG_KVER
	RIG_DEV=$dev
	RIG_DIR=$(mktemp -d /tmp/pscomm-rdma.XXXXXX) || return 1
	trap '_rig_on_exit' EXIT
	trap '_rig_on_signal 130' INT
	trap '_rig_on_signal 143' TERM
	# Two UDP ports on loopback, one per end of the wire.
	base=$((40000 + ($$ % 5000) * 2))
	_RIG_PORTS=("$base" "$((base + 1))")
	mkdir -p "$RIG_DIR/shared"
	# Large socket buffers for the wire (udpbuf.c says why); without a
	# compiler the wire keeps the default ones, and loses more.
	_RIG_PRELOAD=
	if [ "${RIG_UDPBUF:-1}" = 0 ]; then
		_rig_log "RIG_UDPBUF=0: the wire keeps the default socket buffers"
	elif ${CC:-cc} -shared -fPIC -O2 -o "$RIG_DIR/udpbuf.so" \
		"$RIG_SRC/udpbuf.c" -ldl 2>"$RIG_DIR/udpbuf.log"; then
		_RIG_PRELOAD=$RIG_DIR/udpbuf.so
	else
		_rig_log "udpbuf.c did not build; the wire keeps small buffers"
	fi
	nic=${RIG_NIC:-e1000}
	for i in 0 1; do
		mkdir -p "$RIG_DIR/g$i/cmd"
		cp "$RIG_SRC/guest-agent.sh" "$RIG_DIR/g$i/agent.sh"
		LD_PRELOAD=$_RIG_PRELOAD qemu-system-x86_64 -accel tcg -cpu max -smp 1 -m "$RIG_MEM" \
			-nodefaults -no-user-config -display none -no-reboot \
			-kernel "$c/vmlinuz" -initrd "$c/initrd" \
			-append "console=ttyS0 panic=-1 quiet loglevel=4 psc_ip=${RIG_IP[i]} psc_dev=$dev psc_kver=$RIG_KVER psc_name=node$i" \
			-serial "file:$RIG_DIR/g$i/console.log" \
			-fsdev local,id=root,path=/,security_model=none,readonly=on,multidevs=remap \
			-device virtio-9p-pci,fsdev=root,mount_tag=hostroot \
			-fsdev local,id=kmod,path="$c/modules/lib/modules/$RIG_KVER",security_model=none,readonly=on \
			-device virtio-9p-pci,fsdev=kmod,mount_tag=kmod \
			-fsdev local,id=rig,path="$RIG_DIR/g$i",security_model=none \
			-device virtio-9p-pci,fsdev=rig,mount_tag=rig \
			-fsdev local,id=shared,path="$RIG_DIR/shared",security_model=none \
			-device virtio-9p-pci,fsdev=shared,mount_tag=shared \
			-netdev socket,id=n0,udp=127.0.0.1:${_RIG_PORTS[1 - i]},localaddr=127.0.0.1:${_RIG_PORTS[i]} \
			-device "$nic",netdev=n0,mac=52:54:00:77:00:0$((i + 1)) \
			>"$RIG_DIR/g$i/qemu.log" 2>&1 &
		_RIG_PIDS[i]=$!
	done
	for i in 0 1; do
		if ! _rig_wait_file "$RIG_DIR/g$i/ready" "$RIG_BOOT_TIMEOUT" \
			"${_RIG_PIDS[i]}"; then
			_rig_log "guest $i did not come up; its console ends:"
			tail -30 "$RIG_DIR/g$i/console.log" "$RIG_DIR/g$i/qemu.log" \
				"$RIG_DIR/g$i/agent.log" >&2 2>/dev/null
			return 1
		fi
	done
	if ! grep -q '^ok' "$RIG_DIR/g0/ready" ||
		! grep -q '^ok' "$RIG_DIR/g1/ready"; then
		_rig_log "a guest failed to set up $dev:"
		cat "$RIG_DIR/g0/ready" "$RIG_DIR/g1/ready" >&2
		return 1
	fi
	return 0
}

# _rig_wait_file FILE SECONDS [PID]: wait until FILE exists; fail after
# SECONDS, or at once when PID (a guest's qemu) has exited.
_rig_wait_file() {
	local f=$1 end=$(($(date +%s) + $2)) pid=${3-}
	while [ ! -e "$f" ]; do
		[ "$(date +%s)" -ge "$end" ] && return 1
		if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then
			return 1
		fi
		sleep 0.2
	done
	return 0
}

# rig_start GUEST NAME CMD: start shell command CMD in guest GUEST (0 or
# 1) in the background under the name NAME (unique per boot).  It runs
# under sh in the guest's root, with the environment the agent set up
# (PATH, ulimit -l unlimited), the current directory being this one.
# Its output goes to $RIG_DIR/g<GUEST>/NAME.out, its exit status to
# NAME.rc, and the pid of the shell running it to NAME.pid.
rig_start() {
	local g=$1 name=$2 cmd=$3 d=$RIG_DIR/g$1/cmd
	rm -f "$RIG_DIR/g$g/$name".*
	printf 'cd %s || exit 125\n%s\n' "$(pwd)" "$cmd" >"$d/.$name.tmp"
	mv "$d/.$name.tmp" "$d/$name.sh"
}

# rig_ended GUEST NAME SECONDS: wait up to SECONDS for command NAME to
# end, leaving it running if it does not; 0 when it ended, 1 otherwise.
rig_ended() {
	_rig_wait_file "$RIG_DIR/g$1/$2.rc" "$3" "${_RIG_PIDS[$1]}"
}

# rig_alive GUEST: is guest GUEST's qemu still running?
rig_alive() { kill -0 "${_RIG_PIDS[$1]}" 2>/dev/null; }

# rig_wait GUEST NAME SECONDS: wait for command NAME started by rig_start;
# its status, or 124 when it did not end in SECONDS (then it is killed
# in the guest, with its children), or 125 when the guest died.
rig_wait() {
	local g=$1 name=$2 f=$RIG_DIR/g$1/$2
	if ! _rig_wait_file "$f.rc" "$3" "${_RIG_PIDS[g]}"; then
		if kill -0 "${_RIG_PIDS[g]}" 2>/dev/null; then
			_rig_kill_group "$g" "$name"
			return 124
		fi
		return 125
	fi
	return "$(cat "$f.rc")"
}

# rig_stacks GUEST NAME: the stacks of every thread of every process of
# command NAME in guest GUEST (a command that hung), from gdb attached
# in the guest, into $RIG_DIR/g<GUEST>/NAME.stacks; the processes keep
# running. Takes up to a few minutes under emulation.
rig_stacks() {
	rig_run "$1" 300 "for p in \$(pgrep -g \$(cat /rig/$2.pid)); do
		echo \"== pid \$p \$(cat /proc/\$p/comm) wchan \$(cat /proc/\$p/wchan)\"
		timeout 120 gdb -p \$p -batch -nx -ex 'thread apply all bt' 2>&1 |
			grep -E '^(#|Thread)'
	done" >"$RIG_DIR/g$1/$2.stacks" 2>&1
}

# rig_run GUEST SECONDS CMD: rig_start then rig_wait; prints the output.
rig_run() {
	local name=run$((_RIG_SEQ += 1)) rc
	rig_start "$1" "$name" "$3"
	rig_wait "$1" "$name" "$2"
	rc=$?
	cat "$RIG_DIR/g$1/$name.out" 2>/dev/null
	return $rc
}

# rig_kill GUEST NAME [SIGNAL]: send SIGNAL (default KILL) to command NAME
# in guest GUEST: to what the command's shell runs (a command that execs a
# program: that program), so the agent still records its status (137
# for KILL). Returns once the signal is on its way (the guest's agent
# takes it within 0.1 s).
rig_kill() {
	local g=$1 name=$2 sig=${3:-KILL}
	_rig_wait_file "$RIG_DIR/g$g/$name.pid" 10 || return 1
	rig_start "$g" "kill$((_RIG_SEQ += 1))" \
		"pkill -$sig -P \$(cat /rig/$name.pid); true"
}

# _rig_kill_group GUEST NAME: SIGKILL the whole process group of command
# NAME, its shell included (a command that hung).
_rig_kill_group() {
	rig_start "$1" "kill$((_RIG_SEQ += 1))" \
		"kill -KILL -- -\$(cat /rig/$2.pid) 2>/dev/null; true"
}

# rig_poweroff GUEST: pull guest GUEST's plug: its qemu is killed at once,
# as a node that loses power (nothing in the guest runs after).
rig_poweroff() {
	kill -KILL "${_RIG_PIDS[$1]}" 2>/dev/null
	wait "${_RIG_PIDS[$1]}" 2>/dev/null
	return 0
}

# rig_wire_ok: does each guest reach the other across the wire?  0 when
# both answer a ping (busybox's; three tries within 8 s each way).
rig_wire_ok() {
	rig_run 0 30 "busybox ping -c 3 -w 8 ${RIG_IP[1]} >/dev/null" \
		>/dev/null &&
		rig_run 1 30 "busybox ping -c 3 -w 8 ${RIG_IP[0]} >/dev/null" \
			>/dev/null
}

# rig_diag: what each guest's kernel said last and its interface's
# counters, and the host's view of the wire's two sockets (a queue that
# stays full is a guest no longer draining it), on standard output.
rig_diag() {
	local i
	for i in 0 1; do
		echo "guest $i:"
		rig_alive "$i" || { echo "  (its qemu has exited)"; continue; }
		rig_run "$i" 60 "dmesg | grep -v 'speed is unknown' | tail -40; ip -s link show eth0; grep -E 'virtio|eth|CPU' /proc/interrupts; tc -s qdisc show dev eth0; cat /proc/net/softnet_stat; ip neigh" 2>&1 |
			sed 's/^/  /'
	done
	for i in 0 1; do
		[ -s "$RIG_DIR/g$i/qemu.log" ] || continue
		echo "qemu $i said:"
		sed 's/^/  /' "$RIG_DIR/g$i/qemu.log"
	done
	# Whether each qemu still sends and receives the wire's datagrams
	# while guest 0 pings guest 1, and the host's UDP drop counters.
	if command -v strace >/dev/null; then
		local p0 p1
		echo "both qemus' datagrams during a ping from guest 0:"
		timeout 6 strace -f -tt -e trace=sendto,recvfrom \
			-p "${_RIG_PIDS[0]}" -o "$RIG_DIR/strace0" 2>/dev/null &
		p0=$!
		timeout 6 strace -f -tt -e trace=sendto,recvfrom \
			-p "${_RIG_PIDS[1]}" -o "$RIG_DIR/strace1" 2>/dev/null &
		p1=$!
		sleep 0.5
		rig_run 0 30 "busybox ping -c 2 -w 3 ${RIG_IP[1]}" 2>&1 |
			sed 's/^/  ping: /'
		wait "$p0" "$p1"
		for i in 0 1; do
			echo "  qemu $i: $(grep -c 'sendto(' "$RIG_DIR/strace$i") sendto, $(grep -c 'recvfrom(' "$RIG_DIR/strace$i") recvfrom; the last:"
			tail -4 "$RIG_DIR/strace$i" | cut -c1-160 | sed 's/^/    /'
		done
		grep Udp: /proc/net/snmp | sed 's/^/  /'
	fi
	echo "host, the wire's sockets (Recv-Q Send-Q):"
	ss -uanp 2>/dev/null | grep -E ":(${_RIG_PORTS[0]}|${_RIG_PORTS[1]})\b" |
		sed 's/^/  /'
}

# rig_wire_down / rig_wire_up: cut and mend the wire between the guests
# (nftables drops the datagrams of the two loopback ports; the guests see
# no carrier change, as with a failed switch).  Needs root.
rig_wire_down() {
	_RIG_NFT=pscomm_rig_$$
	nft -f - <<EOF || return 1
table inet $_RIG_NFT {
	chain out {
		type filter hook output priority 0; policy accept;
		oifname "lo" udp dport { ${_RIG_PORTS[0]}, ${_RIG_PORTS[1]} } drop
	}
}
EOF
}
rig_wire_up() {
	[ -n "$_RIG_NFT" ] || return 0
	nft delete table inet "$_RIG_NFT" 2>/dev/null
	_RIG_NFT=
	return 0
}

# rig_shutdown: end both guests and remove the scratch directory (unless
# RIG_KEEP=1).  Idempotent; also run on exit, INT and TERM.
rig_shutdown() {
	local i
	rig_wire_up
	for i in 0 1; do
		[ -n "${_RIG_PIDS[i]-}" ] || continue
		kill -TERM "${_RIG_PIDS[i]}" 2>/dev/null
	done
	for i in 0 1; do
		[ -n "${_RIG_PIDS[i]-}" ] || continue
		wait "${_RIG_PIDS[i]}" 2>/dev/null
	done
	_RIG_PIDS=()
	if [ -n "$RIG_DIR" ] && [ "${RIG_KEEP:-0}" != 1 ]; then
		rm -rf "$RIG_DIR"
	elif [ -n "$RIG_DIR" ]; then
		_rig_log "kept $RIG_DIR"
	fi
	RIG_DIR=
}

_rig_on_exit() {
	local rc=$?
	rig_shutdown
	[ "$(type -t rig_exit_hook)" = function ] && rig_exit_hook
	exit $rc
}
_rig_on_signal() {
	trap - EXIT
	rig_shutdown
	exit "$1"
}
