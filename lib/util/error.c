/*
 * Errors: the table behind ps_comm_strerror, and the one place where
 * libfabric and errno codes become PS_COMM_ERR_* values.
 */
#include <errno.h>
#include <string.h>

#include <rdma/fi_errno.h>

#include "ps_comm.h"
#include "util/err.h"
#include "util/util.h"

static const char *const messages[] = {
	[0] = "success",
	[1] = "invalid argument",
	[2] = "out of memory",
	[3] = "message truncated: longer than the receive buffer",
	[4] = "timed out",
	[5] = "peer failed or unreachable",
	[6] = "no usable fabric provider, or the provider failed",
	[7] = "bootstrap (rendezvous) failed",
	[8] = "ranks disagree on version, provider or settings",
	[9] = "malformed or foreign message",
	[10] = "operation cancelled",
	[11] = "libfabric at run time is older than at build time",
	[12] = "invalid configuration or environment variable",
	[13] = "system call failed",
	[14] = "not supported",
	[15] = "internal error",
	[16] = "communicator aborted",
};

const char *ps_comm_strerror(int err)
{
	if (err <= 0 && -err < (int)PSC_ARRAY_SIZE(messages) &&
	    messages[-err])
		return messages[-err];
	return "unknown pscomm error code";
}

int psc_err_from_fi(int err)
{
	if (err >= 0)
		return PS_COMM_OK;
	switch (-err) {
	case EINVAL:
		return PS_COMM_ERR_ARG;
	case ENOMEM:
		return PS_COMM_ERR_NOMEM;
	case FI_ETRUNC:
	case EMSGSIZE:
		return PS_COMM_ERR_TRUNCATE;
	case ETIMEDOUT:
		return PS_COMM_ERR_TIMEOUT;
	case ECONNREFUSED:
	case ECONNRESET:
	case ECONNABORTED:
	case EHOSTUNREACH:
	case ENETUNREACH:
	case EPIPE:
	case ENOTCONN:
	case EADDRNOTAVAIL:
		return PS_COMM_ERR_PEER;
	case ECANCELED:
		return PS_COMM_ERR_CANCELED;
	case ESHUTDOWN:
		return PS_COMM_ERR_ABORTED;
	case EBADE:
		return PS_COMM_ERR_MISMATCH;
	case ENOTRECOVERABLE:
		return PS_COMM_ERR_INTERNAL;
	case EPROTO:
		return PS_COMM_ERR_PROTO;
	case ENODATA:
	case ENODEV:
		return PS_COMM_ERR_PROVIDER;
	case ENOSYS:
	case EOPNOTSUPP:
		return PS_COMM_ERR_NOTSUP;
	default:
		return -err >= FI_ERRNO_OFFSET ? PS_COMM_ERR_PROVIDER
					      : PS_COMM_ERR_SYSTEM;
	}
}
