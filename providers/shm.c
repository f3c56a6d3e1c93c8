/*
 * shm: same-node shared memory. Addresses are strings such as
 * "fi_shm://PID:0:0", so it is never IP-addressed. Progress is manual.
 * Its CQ has no usable wait object: FI_WAIT_FD is ENOSYS and
 * fi_cq_sread ignores its timeout and spins, so waiters poll and back off.
 * It reports truncation as a negative error (-265); the progress engine
 * compares absolute values. In containers CMA may be blocked
 * (FI_SHM_DISABLE_CMA=1 is the workaround).
 *
 * Its tag matching of unexpected messages uses a stale ignore mask
 * (smr_match_tagged in prov/shm/src/smr_ep.c, 1.17 and 1.18), so wildcard
 * receives can miss or mismatch messages that arrived first. pscomm
 * therefore matches first messages in software on shm (lib/p2p/swmatch.c).
 *
 * Each process's region (its command, response, inject and SAR queues)
 * sits under one process-shared spinlock with no owner: senders take the
 * receiver's, progress takes its own (smr_generic_sendmsg,
 * smr_progress_cmd in 1.17). A peer killed while holding one leaves it
 * held forever, hence peer_locks.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "provider.h"

/*
 * An endpoint's queues live in /dev/shm under its name without the
 * "fi_shm://" scheme: "PID:DOMAIN:EP".
 */
static void shm_region_prefix(int pid, char *buf, size_t n)
{
	snprintf(buf, n, "%d:", pid);
}

/* The file under /dev/shm of the endpoint named addr, into name. */
static bool region_name(const void *addr, size_t addrlen, char *name,
			size_t n)
{
	const char *sep;

	if (!addr || !addrlen || addrlen >= n)
		return false;
	memcpy(name, addr, addrlen);
	name[addrlen] = '\0';
	sep = strstr(name, "://");
	if (sep)
		memmove(name, sep + 3, strlen(sep + 3) + 1);
	return name[0] != '\0';
}

static void shm_remove_regions(const void *addr, size_t addrlen, int pid)
{
	char name[256], prefix[24];
	struct dirent *d;
	DIR *dir;
	size_t n;

	if (region_name(addr, addrlen, name, sizeof(name)))
		shm_unlink(name);
	if (pid <= 0 || !(dir = opendir("/dev/shm")))
		return;
	shm_region_prefix(pid, prefix, sizeof(prefix));
	n = strlen(prefix);
	while ((d = readdir(dir)) != NULL)
		if (strncmp(d->d_name, prefix, n) == 0)
			shm_unlink(d->d_name);
	closedir(dir);
}

/*
 * The offset just past the last nonzero byte of fd (size bytes), reading
 * only its data, not its holes (tmpfs reports both). size when that
 * cannot be told (an error, no SEEK_DATA), so that nothing is given back.
 */
static off_t data_end(int fd, off_t size)
{
	off_t ext[64][2], off = 0;
	bool dropped = false;
	int n = 0;
	char buf[16384];

	/* Its data extents, the last 64 of them. */
	while (off < size) {
		off_t start = lseek(fd, off, SEEK_DATA), end;

		if (start < 0 && errno == ENXIO)
			break;
		if (start < 0)
			return size;
		end = lseek(fd, start, SEEK_HOLE);
		if (end <= start)
			return size;
		if (n == 64) {
			memmove(ext[0], ext[1], sizeof(ext[0]) * 63);
			n--;
			dropped = true;
		}
		ext[n][0] = start;
		ext[n][1] = end;
		n++;
		off = end;
	}
	if (n == 0)
		return size;
	for (int i = n - 1; i >= 0; i--) {
		for (off_t hi = ext[i][1]; hi > ext[i][0];) {
			off_t lo = hi - (off_t)sizeof(buf) > ext[i][0]
					   ? hi - (off_t)sizeof(buf)
					   : ext[i][0];
			ssize_t got = pread(fd, buf, (size_t)(hi - lo), lo);

			if (got != hi - lo)
				return size;
			while (got > 0 && buf[got - 1] == 0)
				got--;
			if (got > 0)
				return lo + got;
			hi = lo;
		}
	}
	/* All zeros from the first extent read; what came before is not. */
	return dropped ? ext[0][0] : 0;
}

/*
 * libfabric 1.17 rounds a region up to a power of two (16 MiB with the
 * default queue depths, 12.6 MiB of it used) and copies the endpoint's
 * name into it with strncpy bounded by the rest of the file, which writes
 * zeros to its end (smr_create): 3.7 MiB of /dev/shm per endpoint that
 * nothing reads or writes again, 486 MiB for 128 ranks on one host. The
 * whole pages past the region's last nonzero byte go back to tmpfs;
 * should anything write there later, it gets a zeroed page again. Queue
 * pages libfabric has not written yet are holes already.
 */
static void shm_trim_region(const void *addr, size_t addrlen)
{
	char name[256];
	long page = sysconf(_SC_PAGESIZE);
	struct stat st;
	off_t from;
	int fd;

	if (page <= 0 || !region_name(addr, addrlen, name, sizeof(name)))
		return;
	fd = shm_open(name, O_RDWR, 0);
	if (fd < 0)
		return;
	if (fstat(fd, &st) == 0 && st.st_size > 0) {
		from = (data_end(fd, st.st_size) + page - 1) / page * page;
		if (from < st.st_size)
			(void)fallocate(fd, FALLOC_FL_PUNCH_HOLE |
						    FALLOC_FL_KEEP_SIZE,
					from, st.st_size - from);
	}
	close(fd);
}

static const struct psc_tunable shm_tunables[] = {
	{"FI_SHM_DISABLE_CMA", "1: no cross-memory attach (containers "
			       "without CAP_SYS_PTRACE); pscomm sets it when "
			       "CMA is blocked"},
	{"FI_SHM_TX_SIZE", "send queue depth (1024)"},
	{"FI_SHM_RX_SIZE", "receive queue depth (1024)"},
	{NULL, "/dev/shm must hold the queues: containers default to 64 MB "
	       "(docker --shm-size=1g)"},
	{NULL, NULL},
};

static void shm_derive_caps(const struct fi_info *info, struct psc_caps *c)
{
	psc_generic_derive_caps(info, c);
	c->wait_fd = false;
	c->wait_sread = false;
	c->sw_match = true;
	c->sw_tag_in_data = c->cq_data_size >= 8;
	c->link = PSC_LINK_SHM;
	c->peer_locks = true;
	/*
	 * One pool (FI_SHM_RX_SIZE) holds posted receives and unexpected
	 * arrivals, and fi_trecv fails with ENOMEM once it is empty
	 * (smr_generic_recv, 1.17): chunks run only as far as the receiver
	 * has posted for them.
	 */
	c->chunks_wait = true;
	c->chunks_credit = true;
	/*
	 * Past its inject size, shm completes a send only when the receiver
	 * has matched and copied it: such a message can go without the
	 * go-ahead's round trip, a few at a time.
	 */
	c->ahead_min = c->inject_size + 1;
}

const struct psc_provider_ops psc_shm_ops = {
	.size = sizeof(struct psc_provider_ops),
	.name = "shm",
	.derive_caps = shm_derive_caps,
	.tunables = shm_tunables,
	.no_cma_env = "FI_SHM_DISABLE_CMA",
	.remove_regions = shm_remove_regions,
	.region_prefix = shm_region_prefix,
	.trim_region = shm_trim_region,
};
