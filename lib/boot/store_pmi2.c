/*
 * The PMI2 rendezvous store, for jobs started by srun --mpi=pmi2 (Slurm's
 * libpmi2). PMI2 values are text of at most PMI2_MAX_VALLEN bytes, so a
 * value is published hex-encoded in pieces: "psc.R.KEY" holds its length
 * in bytes and "psc.R.KEY.I" its I-th piece, R being the publishing rank
 * (PMI2's key space is the job's, not a rank's). Commit is
 * PMI2_KVS_Fence, which has no timeout of its own: a watcher thread ends
 * it at the store's deadline by shutting the PMI connection's reading
 * side down. Without PMI2 at build time every entry point reports
 * -ENOSYS.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "boot/store.h"
#include "net/auth.h"
#include "util/param.h"
#include "util/util.h"

#ifdef HAVE_PMI2
#include <pthread.h>
#include <sys/socket.h>
#include <time.h>

#include <slurm/pmi2.h>

/* Hex characters per piece, even and below PMI2_MAX_VALLEN. */
#define PIECE 1000
/* The largest value a rank may publish (records are about 2 KiB). */
#define VALUE_MAX 65536

struct pmi2_store {
	char jobid[PMI2_MAX_VALLEN];
	bool inited; /* PMI2_Init was ours to call */
};

static int pmi2_key(struct psc_store *s, char *out, size_t len, int rank,
		    const char *key, int piece)
{
	int n = piece < 0 ? snprintf(out, len, "psc.%d.%s", rank, key)
			  : snprintf(out, len, "psc.%d.%s.%d", rank, key,
				     piece);

	if (n < 0 || (size_t)n >= len) {
		snprintf(s->err, sizeof(s->err), "PMI2 key for \"%s\" is "
			 "longer than PMI2_MAX_KEYLEN (%d)", key,
			 PMI2_MAX_KEYLEN);
		return -ENAMETOOLONG;
	}
	return 0;
}

static int pmi2_put1(struct psc_store *s, const char *key, const char *val)
{
	int rc = PMI2_KVS_Put(key, val);

	if (rc != PMI2_SUCCESS) {
		snprintf(s->err, sizeof(s->err), "PMI2_KVS_Put(%s): error %d",
			 key, rc);
		return -EIO;
	}
	return 0;
}

static int pmi2_put(struct psc_store *s, const char *key, const void *val,
		    size_t len)
{
	const uint8_t *in = val;
	char k[PMI2_MAX_KEYLEN], v[PIECE + 1];
	int rc;

	if (len > VALUE_MAX) {
		snprintf(s->err, sizeof(s->err), "PMI2 value for \"%s\" is "
			 "%zu bytes, above %d", key, len, VALUE_MAX);
		return -EOVERFLOW;
	}
	for (size_t at = 0, piece = 0; at < len; piece++) {
		size_t n = PSC_MIN(len - at, (size_t)PIECE / 2);

		psc_auth_hex(in + at, n, v);
		at += n;
		rc = pmi2_key(s, k, sizeof(k), s->rank, key, (int)piece);
		if (!rc)
			rc = pmi2_put1(s, k, v);
		if (rc)
			return rc;
	}
	snprintf(v, sizeof(v), "%zu", len);
	rc = pmi2_key(s, k, sizeof(k), s->rank, key, -1);
	return rc ? rc : pmi2_put1(s, k, v);
}

/* The watcher of one fence: done, or the deadline shuts the fd down. */
struct watcher {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done, fired;
	double deadline;
	int fd;
};

static void *watch_fence(void *arg)
{
	struct watcher *w = arg;
	struct timespec ts;

	pthread_mutex_lock(&w->lock);
	while (!w->done) {
		double left = w->deadline - psc_now();

		if (left <= 0) {
			/*
			 * Reading side only: the blocked read sees end of
			 * file, and nothing writes into a shut socket (a
			 * SIGPIPE would end the process before it says why).
			 */
			w->fired = true;
			(void)shutdown(w->fd, SHUT_RD);
			break;
		}
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += (time_t)left + 1;
		pthread_cond_timedwait(&w->cond, &w->lock, &ts);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

static int pmi2_commit(struct psc_store *s)
{
	struct watcher w = {.deadline = s->deadline, .fd = -1};
	const char *fd = getenv("PMI_FD");
	pthread_t t;
	bool armed = false, watched = false;
	int rc;

	if (fd && psc_param_parse_int(fd, &w.fd) == 0 && w.fd >= 0) {
		pthread_mutex_init(&w.lock, NULL);
		pthread_cond_init(&w.cond, NULL);
		armed = true;
		watched = pthread_create(&t, NULL, watch_fence, &w) == 0;
	}
	rc = PMI2_KVS_Fence();
	if (watched) {
		pthread_mutex_lock(&w.lock);
		w.done = true;
		pthread_cond_signal(&w.cond);
		pthread_mutex_unlock(&w.lock);
		pthread_join(t, NULL);
	}
	if (armed) {
		pthread_cond_destroy(&w.cond);
		pthread_mutex_destroy(&w.lock);
	}
	if (w.fired) {
		struct pmi2_store *p = s->priv;

		/* The connection is gone: no PMI2_Finalize over it. */
		p->inited = false;
		snprintf(s->err, sizeof(s->err), "PMI2_KVS_Fence did not "
			 "complete within PS_COMM_TIMEOUT: a rank did not "
			 "start, or died before the fence");
		return -ETIMEDOUT;
	}
	if (rc != PMI2_SUCCESS) {
		snprintf(s->err, sizeof(s->err), "PMI2_KVS_Fence: error %d",
			 rc);
		return -EIO;
	}
	return 0;
}

static int pmi2_get1(struct psc_store *s, int rank, const char *k,
		     char *v, int vlen)
{
	struct pmi2_store *p = s->priv;
	int got = 0;
	int rc = PMI2_KVS_Get(p->jobid, rank, k, v, vlen, &got);

	if (rc != PMI2_SUCCESS || got < 0 || got >= vlen) {
		snprintf(s->err, sizeof(s->err), "PMI2_KVS_Get(rank %d, %s): "
			 "error %d", rank, k, rc);
		return -EIO;
	}
	v[got] = '\0';
	return 0;
}

static int pmi2_get(struct psc_store *s, int rank, const char *key,
		    void **val, size_t *len)
{
	char k[PMI2_MAX_KEYLEN], v[PMI2_MAX_VALLEN + 1];
	int total = 0;
	uint8_t *out;
	size_t at = 0;
	int rc = pmi2_key(s, k, sizeof(k), rank, key, -1);

	if (!rc)
		rc = pmi2_get1(s, rank, k, v, (int)sizeof(v));
	if (rc)
		return rc;
	if (psc_param_parse_int(v, &total) != 0 || total < 0 ||
	    total > VALUE_MAX) {
		snprintf(s->err, sizeof(s->err), "PMI2 length of rank %d's "
			 "\"%s\" is malformed", rank, key);
		return -EPROTO;
	}
	out = malloc(total ? (size_t)total : 1);
	if (!out)
		return -ENOMEM;
	for (int piece = 0; !rc && at < (size_t)total; piece++) {
		rc = pmi2_key(s, k, sizeof(k), rank, key, piece);
		if (!rc)
			rc = pmi2_get1(s, rank, k, v, (int)sizeof(v));
		if (!rc && !v[0]) {
			snprintf(s->err, sizeof(s->err), "PMI2 value %s of "
				 "rank %d is empty", k, rank);
			rc = -EPROTO;
		} else if (!rc) {
			size_t got = 0;

			if (psc_auth_unhex(v, out + at, (size_t)total - at,
					   &got) != 0) {
				snprintf(s->err, sizeof(s->err), "PMI2 value "
					 "%s of rank %d is malformed", k, rank);
				rc = -EPROTO;
			}
			at += got;
		}
	}
	if (rc) {
		free(out);
		return rc;
	}
	*val = out;
	*len = (size_t)total;
	return 0;
}

static int pmi2_finish(struct psc_store *s)
{
	return 0;
}

static void pmi2_close(struct psc_store *s)
{
	struct pmi2_store *p = s->priv;

	if (p && p->inited)
		PMI2_Finalize();
	free(p);
	s->priv = NULL;
}

static const struct psc_store_ops pmi2_ops = {
	.size = sizeof(struct psc_store_ops),
	.name = "pmi2",
	.put = pmi2_put,
	.commit = pmi2_commit,
	.get = pmi2_get,
	.finish = pmi2_finish,
	.close = pmi2_close,
};

bool psc_store_pmi2_available(void)
{
	return getenv("PMI_FD") != NULL && getenv("PMI_JOBID") != NULL;
}

int psc_store_pmi2_open(struct psc_store *s, bool make_key)
{
	struct pmi2_store *p = calloc(1, sizeof(*p));
	int spawned = 0, size = 0, rank = -1, appnum = 0, rc;

	s->ops = &pmi2_ops;
	if (!p)
		return -ENOMEM;
	s->priv = p;
	if (!PMI2_Initialized()) {
		rc = PMI2_Init(&spawned, &size, &rank, &appnum);
		if (rc != PMI2_SUCCESS) {
			snprintf(s->err, sizeof(s->err), "PMI2_Init: error %d "
				 "(not started by srun --mpi=pmi2?)", rc);
			return -EIO;
		}
		p->inited = true;
	} else if (PMI2_Job_GetRank(&rank) != PMI2_SUCCESS ||
		   PMI2_Info_GetSize(&size) != PMI2_SUCCESS) {
		snprintf(s->err, sizeof(s->err), "PMI2 does not say this "
			 "process's rank and size");
		return -EIO;
	}
	if (rank != s->rank || size != s->size) {
		snprintf(s->err, sizeof(s->err), "PMI2 says rank %d of %d but "
			 "the environment says rank %d of %d", rank, size,
			 s->rank, s->size);
		return -EINVAL;
	}
	rc = PMI2_Job_GetId(p->jobid, (int)sizeof(p->jobid));
	if (rc != PMI2_SUCCESS) {
		snprintf(s->err, sizeof(s->err), "PMI2_Job_GetId: error %d",
			 rc);
		return -EIO;
	}
	return make_key ? psc_store_share_key(s) : 0;
}

#else /* !HAVE_PMI2 */

bool psc_store_pmi2_available(void)
{
	return false;
}

int psc_store_pmi2_open(struct psc_store *s, bool make_key)
{
	snprintf(s->err, sizeof(s->err), "this pscomm was built without "
		 "PMI2 (install libpmi2-0-dev and reconfigure)");
	return -ENOSYS;
}

#endif
