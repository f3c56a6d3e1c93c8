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
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
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

static void shm_remove_regions(const void *addr, size_t addrlen, int pid)
{
	char name[256], prefix[24];
	const char *sep;
	struct dirent *d;
	DIR *dir;
	size_t n;

	if (addr && addrlen && addrlen < sizeof(name)) {
		memcpy(name, addr, addrlen);
		name[addrlen] = '\0';
		sep = strstr(name, "://");
		shm_unlink(sep ? sep + 3 : name);
	}
	if (pid <= 0 || !(dir = opendir("/dev/shm")))
		return;
	shm_region_prefix(pid, prefix, sizeof(prefix));
	n = strlen(prefix);
	while ((d = readdir(dir)) != NULL)
		if (strncmp(d->d_name, prefix, n) == 0)
			shm_unlink(d->d_name);
	closedir(dir);
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
};
