/*
 * The liveness monitor's inputs (lib/live/live.c): the frames of a
 * liveness link, which rank 0 reads from whoever connects to its
 * monitor's port, and each rank's liveness part of its bootstrap record
 * ("addr,proc,pid"). The input is both: a byte stream cut into
 * frames as link_read does, and, as text, a record for psc_live_peer.
 * Every frame the splitter returns lies inside the bytes, and an accepted
 * record names a positive pid.
 */
#include <errno.h>

#include "fuzz.h"
#include "live/live.h"

/* The frame layout's limits (HDR and FRAME_MAX in live.c). */
#define LIVE_HDR 8
#define LIVE_FRAME_MAX 480

static struct psc_live *monitor(void)
{
	static struct psc_live *l;
	struct psc_live_config cfg = {.rank = 1, .size = 2, .timeout = 1};
	struct psc_iface iface;
	char err[256];

	if (l)
		return l;
	/*
	 * Rank 1 on no interface: its listener fails (it says so once) and
	 * the monitor runs without one, as on a host out of ports.
	 */
	memset(&iface, 0, sizeof(iface));
	cfg.iface = &iface;
	if (psc_live_open(&l, &cfg, err, sizeof(err)) != 0) {
		fprintf(stderr, "psc_live_open: %s\n", err);
		abort();
	}
	return l;
}

static void frames(const uint8_t *data, size_t size)
{
	size_t off = 0;

	for (;;) {
		struct psc_live_frame f;
		int n = psc_live_frame_next(data + off, size - off, &f);

		if (n <= 0) {
			PSC_FUZZ_ASSERT(n == 0 || n == -EPROTO);
			return;
		}
		PSC_FUZZ_ASSERT((size_t)n == LIVE_HDR + f.plen);
		PSC_FUZZ_ASSERT((size_t)n <= size - off);
		PSC_FUZZ_ASSERT(f.plen <= LIVE_FRAME_MAX);
		PSC_FUZZ_ASSERT(f.pl == data + off + LIVE_HDR);
		PSC_FUZZ_ASSERT(f.type == data[off]);
		off += (size_t)n;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = psc_fuzz_str(data, size), err[256];
	int r = size ? data[0] & 1 : 0;

	frames(data, size);
	err[0] = '\0';
	if (psc_live_peer(monitor(), r, "fuzzhost", text, err, sizeof(err)) !=
	    0)
		PSC_FUZZ_ASSERT(err[0]);
	free(text);
	return 0;
}
