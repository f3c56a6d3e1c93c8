/*
 * Replay of recorded `fi_info -v` text, for the unit tests and
 * `ps_comm_info --replay`. Not part of libpscomm: a separate library
 * that the tests and the tool link.
 */
#ifndef PSC_REPLAY_H
#define PSC_REPLAY_H

#include <stddef.h>
#include <stdint.h>

struct fi_info;

/*
 * psc_replay_parse builds a list of real fi_info entries (free with
 * psc_replay_free or fi_freeinfo) from text; lines starting with
 * '#' are comments. Returns 0, or a negative errno with "line N: ..." in
 * err. psc_replay_load does the same for a file.
 */
int psc_replay_parse(const char *text, struct fi_info **list, char *err,
		     size_t len);
int psc_replay_load(const char *path, struct fi_info **list, char *err,
		    size_t len);

/*
 * Free a list from psc_replay_parse, psc_replay_load or
 * psc_replay_getinfo (fi_freeinfo, for callers that must not call
 * libfabric themselves). NULL is a no-op.
 */
void psc_replay_free(struct fi_info *list);

/*
 * A psc_getinfo_fn answering from the list given to psc_replay_use
 * (which must outlive the calls): the entries that satisfy the hints as
 * libfabric checks them (provider name, endpoint type, caps, modes the
 * entry needs, mr_mode duties, message order, AV type), duplicated, with
 * caps and mr_mode narrowed to the hints. -FI_ENODATA when none. Not
 * thread-safe: one replay at a time per process.
 */
void psc_replay_use(const struct fi_info *list);
int psc_replay_getinfo(uint32_t version, const char *node,
		       const char *service, uint64_t flags,
		       const struct fi_info *hints, struct fi_info **info);

#endif /* PSC_REPLAY_H */
