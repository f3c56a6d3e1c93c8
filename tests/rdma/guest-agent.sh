# The RDMA rig's agent (tests/rdma/rig.sh), run by each guest's /init in
# the guest's root (the host's file system under an overlay).  It sets up
# the guest (mounts, its address on eth0, the RDMA device named on the
# kernel command line), writes /rig/ready ("ok ..." or what failed), then
# runs every command the host drops into /rig/cmd/NAME.sh, in the
# background and in a process group of its own, writing NAME.out, NAME.pid
# and NAME.rc beside it.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root LANG=C.UTF-8
exec >/rig/agent.log 2>&1
ip= dev= name=
for arg in $(cat /proc/cmdline); do
	case $arg in
	psc_ip=*) ip=${arg#psc_ip=} ;;
	psc_dev=*) dev=${arg#psc_dev=} ;;
	psc_name=*) name=${arg#psc_name=} ;;
	esac
done
fail() {
	echo "failed: $*" >/rig/ready
	exec sleep 100000
}
# /tmp stays the host's, under the overlay (a build tree may live there);
# what the guest writes lands in its own tmpfs layer.
mount -t tmpfs tmpfs /run
mkdir -p /dev/shm /dev/pts
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
mount -t devpts devpts /dev/pts 2>/dev/null
hostname "$name"
echo "127.0.0.1 localhost $name" >/etc/hosts
ip link set lo up
ip addr add "$ip/24" dev eth0 || fail "address $ip on eth0"
ip link set eth0 up || fail "eth0 up"
ulimit -l unlimited
case $dev in
rxe) modprobe rdma_rxe || fail "modprobe rdma_rxe" ;;
siw) modprobe siw || fail "modprobe siw" ;;
esac
modprobe rdma_ucm || fail "modprobe rdma_ucm"
modprobe ib_uverbs || fail "modprobe ib_uverbs"
rdma link add "${dev}0" type "$dev" netdev eth0 || fail "rdma link add ${dev}0"
# Wait for the port to be active (rxe follows eth0's carrier).
i=0
until rdma link show "${dev}0/1" | grep -q 'state ACTIVE'; do
	i=$((i + 1))
	[ $i -lt 100 ] || fail "${dev}0 port not active: $(rdma link show)"
	sleep 0.1
done
echo "ok $name $ip ${dev}0 $(uname -r)" >/rig/ready

# Commands from the other guest (rig-rsh, for launchers such as mpirun
# that start processes on a host by name) arrive in /rig-shared/rsh/ as
# NAME.HOST.sh; their output and status go beside them.
mkdir -p /rig-shared/rsh
cd /rig/cmd || exit 1
while :; do
	for f in /rig/cmd/*.sh "/rig-shared/rsh/"*".$name.sh"; do
		[ -e "$f" ] || continue
		d=${f%/*}
		n=${f##*/}
		n=${n%.sh}
		out=/rig
		[ "$d" = /rig/cmd ] || out=$d
		mv "$f" "$d/$n.run"
		# setsid: a process group of its own, for rig_kill.
		setsid sh -c 'echo $$ >'"$out/$n"'.pid.tmp
			mv '"$out/$n"'.pid.tmp '"$out/$n"'.pid
			sh '"$d/$n"'.run >'"$out/$n"'.out 2>&1
			echo $? >'"$out/$n"'.rc.tmp
			mv '"$out/$n"'.rc.tmp '"$out/$n"'.rc' </dev/null &
	done
	sleep 0.1
done
