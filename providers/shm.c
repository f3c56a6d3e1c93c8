/*
 * shm: same-node shared memory. Addresses are strings such as
 * "fi_shm://PID:0:0", so it is never IP-addressed. Progress is manual.
 * Its CQ has no usable wait object: FI_WAIT_FD is ENOSYS and
 * fi_cq_sread ignores its timeout and spins, so waiters poll and back off.
 * It reports truncation as a negative error (-265); the progress engine
 * compares absolute values. In containers CMA may be blocked
 * (FI_SHM_DISABLE_CMA=1 is the workaround).
 */
#include "provider.h"

static void shm_derive_caps(const struct fi_info *info, struct psc_caps *c)
{
	psc_generic_derive_caps(info, c);
	c->wait_fd = false;
	c->wait_sread = false;
}

const struct psc_provider_ops psc_shm_ops = {
	.size = sizeof(struct psc_provider_ops),
	.name = "shm",
	.derive_caps = shm_derive_caps,
};
