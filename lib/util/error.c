/*
 * Errors: the table behind ps_comm_strerror, keyed by code name, and
 * psc_err_public, the one place where libfabric and errno codes become
 * PS_COMM_ERR_* values (see util/err.h for the mapping by stage).
 */
#include <errno.h>
#include <string.h>

#include <rdma/fi_errno.h>

#include "ps_comm.h"
#include "util/err.h"
#include "util/util.h"

/* Every public code with its message; one line a code, in any order. */
#define PSC_ERR_MESSAGES(X)                                                    \
	X(PS_COMM_OK, "success")                                               \
	X(PS_COMM_ERR_ARG, "invalid argument")                                 \
	X(PS_COMM_ERR_NOMEM, "out of memory")                                  \
	X(PS_COMM_ERR_TRUNCATE,                                                \
	  "message truncated: longer than the receive buffer")                 \
	X(PS_COMM_ERR_TIMEOUT, "timed out")                                    \
	X(PS_COMM_ERR_PEER, "peer failed or unreachable")                      \
	X(PS_COMM_ERR_PROVIDER, "no usable fabric provider")                   \
	X(PS_COMM_ERR_BOOTSTRAP, "bootstrap (rendezvous) failed")              \
	X(PS_COMM_ERR_MISMATCH,                                                \
	  "ranks disagree on version, provider or settings")                   \
	X(PS_COMM_ERR_PROTO, "malformed or foreign message")                   \
	X(PS_COMM_ERR_CANCELED, "operation cancelled")                         \
	X(PS_COMM_ERR_VERSION,                                                 \
	  "libfabric at run time is older than at build time")                 \
	X(PS_COMM_ERR_CONFIG, "invalid configuration or environment variable") \
	X(PS_COMM_ERR_SYSTEM, "system call failed")                            \
	X(PS_COMM_ERR_NOTSUP, "not supported")                                 \
	X(PS_COMM_ERR_INTERNAL, "internal error")                              \
	X(PS_COMM_ERR_ABORTED, "communicator aborted")                         \
	X(PS_COMM_ERR_FABRIC,                                                  \
	  "the fabric provider failed (opening it, or in an operation)")       \
	X(PS_COMM_ERR_REVOKED, "communicator revoked")

#define PSC_ERR_ENTRY(code, text) [-(code)] = (text),
static const char *const messages[] = {PSC_ERR_MESSAGES(PSC_ERR_ENTRY)};

/*
 * One member a listed code: a code listed twice does not compile, and
 * the count must fill the table from 0 to PSC_ERR_LAST. Enum values are
 * distinct, so every index has its message.
 */
#define PSC_ERR_MEMBER(code, text) char has_##code;
struct psc_err_listed {
	PSC_ERR_MESSAGES(PSC_ERR_MEMBER)
};
_Static_assert(PSC_ARRAY_SIZE(messages) == 1 - PSC_ERR_LAST,
	       "PSC_ERR_LAST is not the last PS_COMM_ERR_* code");
_Static_assert(sizeof(struct psc_err_listed) == 1 - PSC_ERR_LAST,
	       "a PS_COMM_ERR_* code has no message");

const char *ps_comm_strerror(int err)
{
	if (err <= 0 && err >= PSC_ERR_LAST)
		return messages[-err];
	return "unknown pscomm error code";
}

/* Codes that mean the same at every stage, or 0. err is positive. */
static int named(int err)
{
	switch (err) {
	case ENOMEM:
		return PS_COMM_ERR_NOMEM;
	case FI_ETRUNC:
	case EMSGSIZE:
		return PS_COMM_ERR_TRUNCATE;
	case ECANCELED:
		return PS_COMM_ERR_CANCELED;
	case ESHUTDOWN:
		return PS_COMM_ERR_ABORTED;
	case EKEYREVOKED:
		return PS_COMM_ERR_REVOKED;
	case EBADE:
		return PS_COMM_ERR_MISMATCH;
	case EPROTO:
		return PS_COMM_ERR_PROTO;
	case ENOTRECOVERABLE:
		return PS_COMM_ERR_INTERNAL;
	case ENOSYS:
	case EOPNOTSUPP:
		return PS_COMM_ERR_NOTSUP;
	default:
		return 0;
	}
}

static bool connection_error(int err)
{
	switch (err) {
	case ECONNREFUSED:
	case ECONNRESET:
	case ECONNABORTED:
	case EHOSTUNREACH:
	case ENETUNREACH:
	case EPIPE:
	case ENOTCONN:
	case EADDRNOTAVAIL:
		return true;
	default:
		return false;
	}
}

static int from_op(int err)
{
	if (err == EINVAL)
		return PS_COMM_ERR_ARG;
	if (err == ETIMEDOUT)
		return PS_COMM_ERR_TIMEOUT;
	if (connection_error(err))
		return PS_COMM_ERR_PEER;
	/* ENODATA, ENODEV: the provider's failure, as other -FI_E* codes. */
	if (err == ENODATA || err == ENODEV || err >= FI_ERRNO_OFFSET)
		return PS_COMM_ERR_FABRIC;
	return PS_COMM_ERR_SYSTEM;
}

/* A rank that never came is a bootstrap failure, not a timeout. */
static int from_boot(int err)
{
	if (err == EINVAL || err == ENOTDIR)
		return PS_COMM_ERR_CONFIG;
	if (err == ENODATA) /* a reopen after the vote found nothing */
		return PS_COMM_ERR_PROVIDER;
	if (err == ENODEV || err >= FI_ERRNO_OFFSET) /* or it failed */
		return PS_COMM_ERR_FABRIC;
	return PS_COMM_ERR_BOOTSTRAP;
}

/*
 * Reaching one peer: what the peer answered, or else the peer's failure
 * (a refused or reset connection, a wrong key, an unresolvable host).
 */
static int from_connect(int err)
{
	switch (err) {
	case ENOMEM:
		return PS_COMM_ERR_NOMEM;
	case ETIMEDOUT:
		return PS_COMM_ERR_TIMEOUT;
	case EBADE:
		return PS_COMM_ERR_MISMATCH;
	case EPROTO:
		return PS_COMM_ERR_PROTO;
	case EINVAL:
		return PS_COMM_ERR_ARG;
	default:
		return PS_COMM_ERR_PEER;
	}
}

int psc_err_public(int err, enum psc_err_stage stage)
{
	int r;

	if (err >= 0)
		return PS_COMM_OK;
	err = -err;
	if (stage == PSC_ERR_CONNECT)
		return from_connect(err);
	r = named(err);
	if (r)
		return r;
	switch (stage) {
	case PSC_ERR_OPEN:
		return err == ENODATA ? PS_COMM_ERR_PROVIDER
				      : PS_COMM_ERR_FABRIC;
	case PSC_ERR_BOOT:
		return from_boot(err);
	case PSC_ERR_LOCAL:
		return PS_COMM_ERR_SYSTEM;
	case PSC_ERR_OP:
	default:
		return from_op(err);
	}
}

int psc_err_from_fi(int err)
{
	return psc_err_public(err, PSC_ERR_OP);
}
