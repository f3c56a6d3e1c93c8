/*
 * The PMIx rendezvous store, for jobs started by a PMIx server such as
 * Open MPI's mpirun or srun --mpi=pmix. Put publishes into the global
 * scope, commit is PMIx_Commit plus a fence that collects data, and get
 * reads another rank's key. Every blocking call carries PMIX_TIMEOUT.
 * Without PMIx at build time every entry point reports -ENOSYS.
 *
 * A job that set no PS_COMM_JOB_KEY still gets one through the PMIx
 * server (psc_store_share_key, a fence at open).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "boot/store.h"
#include "net/auth.h"
#include "net/net.h"
#include "net/wire.h"
#include "util/log.h"
#include "util/util.h"

#ifdef HAVE_PMIX
#include <pmix.h>

struct pmix_store {
	pmix_proc_t me;
};

static int pmix_timeout(const struct psc_store *s)
{
	double left = s->deadline - psc_now();

	return left < 1 ? 1 : (int)left;
}

static int pmix_put(struct psc_store *s, const char *key, const void *val,
		    size_t len)
{
	pmix_value_t v;
	pmix_status_t rc;

	PMIX_VALUE_CONSTRUCT(&v);
	v.type = PMIX_BYTE_OBJECT;
	v.data.bo.bytes = (char *)val;
	v.data.bo.size = len;
	rc = PMIx_Put(PMIX_GLOBAL, key, &v);
	if (rc != PMIX_SUCCESS) {
		snprintf(s->err, sizeof(s->err), "PMIx_Put(%s): %s", key,
			 PMIx_Error_string(rc));
		return -EIO;
	}
	return 0;
}

static int pmix_commit(struct psc_store *s)
{
	struct pmix_store *p = s->priv;
	pmix_info_t info[2];
	pmix_proc_t all;
	bool collect = true;
	int tmo = pmix_timeout(s);
	pmix_status_t rc = PMIx_Commit();

	if (rc == PMIX_SUCCESS) {
		PMIX_PROC_CONSTRUCT(&all);
		PMIX_LOAD_NSPACE(all.nspace, p->me.nspace);
		all.rank = PMIX_RANK_WILDCARD;
		PMIX_INFO_LOAD(&info[0], PMIX_COLLECT_DATA, &collect,
			       PMIX_BOOL);
		PMIX_INFO_LOAD(&info[1], PMIX_TIMEOUT, &tmo, PMIX_INT);
		rc = PMIx_Fence(&all, 1, info, 2);
	}
	if (rc != PMIX_SUCCESS) {
		snprintf(s->err, sizeof(s->err), "PMIx fence: %s",
			 PMIx_Error_string(rc));
		return rc == PMIX_ERR_TIMEOUT ? -ETIMEDOUT : -EIO;
	}
	return 0;
}

static int pmix_get(struct psc_store *s, int rank, const char *key,
		    void **val, size_t *len)
{
	struct pmix_store *p = s->priv;
	pmix_value_t *v = NULL;
	pmix_proc_t peer;
	pmix_info_t info;
	int tmo = pmix_timeout(s);
	pmix_status_t rc;

	PMIX_PROC_CONSTRUCT(&peer);
	PMIX_LOAD_NSPACE(peer.nspace, p->me.nspace);
	peer.rank = (pmix_rank_t)rank;
	PMIX_INFO_LOAD(&info, PMIX_TIMEOUT, &tmo, PMIX_INT);
	rc = PMIx_Get(&peer, key, &info, 1, &v);
	if (rc != PMIX_SUCCESS || !v || v->type != PMIX_BYTE_OBJECT) {
		snprintf(s->err, sizeof(s->err), "PMIx_Get(rank %d, %s): %s",
			 rank, key, PMIx_Error_string(rc));
		if (v)
			PMIX_VALUE_RELEASE(v);
		return rc == PMIX_ERR_TIMEOUT ? -ETIMEDOUT : -EIO;
	}
	*len = v->data.bo.size;
	*val = malloc(*len ? *len : 1);
	if (*val)
		memcpy(*val, v->data.bo.bytes, *len);
	PMIX_VALUE_RELEASE(v);
	return *val ? 0 : -ENOMEM;
}

static int pmix_finish(struct psc_store *s)
{
	return 0;
}

static void pmix_close(struct psc_store *s)
{
	if (s->priv)
		PMIx_Finalize(NULL, 0);
	free(s->priv);
	s->priv = NULL;
}

static const struct psc_store_ops pmix_ops = {
	.size = sizeof(struct psc_store_ops),
	.name = "pmix",
	.put = pmix_put,
	.commit = pmix_commit,
	.get = pmix_get,
	.finish = pmix_finish,
	.close = pmix_close,
};

bool psc_store_pmix_available(void)
{
	return getenv("PMIX_NAMESPACE") != NULL ||
	       getenv("PMIX_SERVER_URI2") != NULL ||
	       getenv("PMIX_SERVER_URI3") != NULL ||
	       getenv("PMIX_SERVER_URI4") != NULL;
}

/* Read a job-level value (e.g. the job size) as an unsigned integer. */
static int pmix_job_uint(const pmix_proc_t *me, const char *key,
			 uint32_t *out)
{
	pmix_proc_t job;
	pmix_value_t *v = NULL;
	pmix_status_t rc;

	PMIX_PROC_CONSTRUCT(&job);
	PMIX_LOAD_NSPACE(job.nspace, me->nspace);
	job.rank = PMIX_RANK_WILDCARD;
	rc = PMIx_Get(&job, key, NULL, 0, &v);
	if (rc != PMIX_SUCCESS || !v)
		return -EIO;
	*out = v->type == PMIX_UINT32 ? v->data.uint32
	       : v->type == PMIX_INT  ? (uint32_t)v->data.integer
				      : 0;
	PMIX_VALUE_RELEASE(v);
	return *out ? 0 : -EIO;
}

int psc_store_pmix_rank_size(int *rank, int *size)
{
	pmix_proc_t me;
	uint32_t n = 0;
	int rc = -EIO;

	if (PMIx_Init(&me, NULL, 0) != PMIX_SUCCESS)
		return -EIO;
	if (pmix_job_uint(&me, PMIX_JOB_SIZE, &n) == 0) {
		*rank = (int)me.rank;
		*size = (int)n;
		rc = 0;
	}
	PMIx_Finalize(NULL, 0);
	return rc;
}

int psc_store_pmix_open(struct psc_store *s, bool make_key)
{
	struct pmix_store *p = calloc(1, sizeof(*p));
	pmix_status_t rc;

	s->ops = &pmix_ops;
	if (!p)
		return -ENOMEM;
	rc = PMIx_Init(&p->me, NULL, 0);
	if (rc != PMIX_SUCCESS) {
		free(p);
		snprintf(s->err, sizeof(s->err), "PMIx_Init: %s (not "
			 "started by a PMIx launcher?)", PMIx_Error_string(rc));
		return -EIO;
	}
	s->priv = p;
	if ((int)p->me.rank != s->rank) {
		snprintf(s->err, sizeof(s->err), "PMIx says rank %u but the "
			 "environment says rank %d", p->me.rank, s->rank);
		return -EINVAL;
	}
	return make_key ? psc_store_share_key(s) : 0;
}

#else /* !HAVE_PMIX */

bool psc_store_pmix_available(void)
{
	return false;
}

int psc_store_pmix_rank_size(int *rank, int *size)
{
	return -ENOSYS;
}

int psc_store_pmix_open(struct psc_store *s, bool make_key)
{
	snprintf(s->err, sizeof(s->err), "this pscomm was built without "
		 "PMIx (reconfigure with --with-pmix)");
	return -ENOSYS;
}

#endif
