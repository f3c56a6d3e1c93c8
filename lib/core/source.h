/*
 * Progress sources: work of a layer above the core (a running
 * collective) that an endpoint's progress polls. The layer embeds one in
 * its own object and reaches that object with psc_container_of. No
 * libfabric type appears here, so p2p's narrow interface can embed it.
 */
#ifndef PSC_SOURCE_H
#define PSC_SOURCE_H

#include <stdbool.h>

/*
 * poll is called from blocking waits and psc_ep_progress without the
 * endpoint lock, by one thread at a time, never blocks, and returns how
 * many things moved; it sets finished when it is done, and finish is then
 * called once, after it left the endpoint's list and without any lock.
 */
struct psc_prog_src {
	int (*poll)(struct psc_prog_src *src);
	void (*finish)(struct psc_prog_src *src);
	bool finished;
	struct psc_prog_src *next;
};

#endif /* PSC_SOURCE_H */
