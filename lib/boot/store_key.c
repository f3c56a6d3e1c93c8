/*
 * A job key for a job that set none, handed out through a launcher's
 * store (PMIx, PMI2): rank 0 makes one (psc_auth_make_key: 32 random
 * bytes, which need no stretching), and every rank reads it after a
 * commit. pscomm trusts the launcher's store as it trusts
 * the launcher; the key then guards pscomm's own listeners.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "boot/store.h"
#include "net/auth.h"

#define KEY_NAME "pscomm.job_key"

int psc_store_share_key(struct psc_store *s)
{
	void *val = NULL;
	size_t len = 0;
	int rc = 0;

	if (s->rank == 0) {
		psc_auth_make_key(s->made_key);
		rc = s->ops->put(s, KEY_NAME, s->made_key,
				 strlen(s->made_key));
	}
	if (!rc)
		rc = s->ops->commit(s);
	if (!rc && s->rank != 0)
		rc = s->ops->get(s, 0, KEY_NAME, &val, &len);
	if (!rc && s->rank != 0) {
		if (len == 0 || len >= sizeof(s->made_key)) {
			snprintf(s->err, sizeof(s->err), "the job key rank 0 "
				 "handed out through %s is malformed",
				 s->ops->name);
			rc = -EPROTO;
		} else {
			memcpy(s->made_key, val, len);
			s->made_key[len] = '\0';
		}
	}
	if (val) {
		explicit_bzero(val, len);
		free(val);
	}
	return rc;
}
