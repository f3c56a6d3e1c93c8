/*
 * Error conventions inside pscomm. Internal functions return 0 or a
 * negative errno or -FI_E* code, never a PS_COMM_ERR_* value, so the two
 * spaces cannot be confused (-12 is -ENOMEM inside, PS_COMM_ERR_CONFIG
 * outside). Where a failure needs words, the function also takes a
 * message buffer (char *err, size_t len) and writes one line into it.
 * psc_err_public (lib/util/error.c) is the one translation into
 * PS_COMM_ERR_* values: the communicator layer and the van call it where
 * a public function returns, and record the words as the last error.
 *
 * Conditions with no obvious errno use these, everywhere:
 *   -FI_ETRUNC    message longer than the receive buffer
 *   -FI_ECANCELED operation cancelled
 *   -ETIMEDOUT    a deadline passed
 *   -ESHUTDOWN    the communicator was aborted
 *   -EBADE        ranks disagree (settings, counts, data types)
 *   -EPROTO       malformed or foreign message
 *   -ENODATA      no usable provider (while choosing one)
 *   -ENODEV       the provider (or device) failed to open
 *   -FI_EOTHER    the provider failed, with no better code
 *   -ENOTRECOVERABLE  internal error
 */
#ifndef PSC_ERR_H
#define PSC_ERR_H

/*
 * The last (most negative) PS_COMM_ERR_* code. A code appended to the
 * enum in include/ps_comm.h moves this, and needs a message in error.c
 * (the build fails without one).
 */
#define PSC_ERR_LAST PS_COMM_ERR_REVOKED

/*
 * Where an internal code arose. Codes with one meaning (the list above,
 * -ENOMEM, -EMSGSIZE as -FI_ETRUNC, -ENOSYS/-EOPNOTSUPP as NOTSUP)
 * translate the same at every stage but CONNECT; the stage decides the
 * rest. CONNECT (the van reaching a node by address) knows only NOMEM,
 * TIMEOUT, MISMATCH (-EBADE), PROTO (-EPROTO) and ARG (-EINVAL); every
 * other code there is the node's failure, PEER.
 *
 *   code              OP        OPEN      BOOT       CONNECT  LOCAL
 *   -EINVAL           ARG       FABRIC    CONFIG     ARG      SYSTEM
 *   -ETIMEDOUT        TIMEOUT   FABRIC    BOOTSTRAP  TIMEOUT  SYSTEM
 *   connection errs   PEER      FABRIC    BOOTSTRAP  PEER     SYSTEM
 *   -ENODATA          FABRIC    PROVIDER  PROVIDER   PEER     SYSTEM
 *   -ENODEV           FABRIC    FABRIC    FABRIC     PEER     SYSTEM
 *   -ENOTDIR          SYSTEM    FABRIC    CONFIG     PEER     SYSTEM
 *   other errno       SYSTEM    FABRIC    BOOTSTRAP  PEER     SYSTEM
 *   other -FI_E*      FABRIC    FABRIC    FABRIC     PEER     SYSTEM
 *
 * (connection errors: ECONNREFUSED, ECONNRESET, ECONNABORTED,
 * EHOSTUNREACH, ENETUNREACH, EPIPE, ENOTCONN, EADDRNOTAVAIL.)
 * -ENODATA means "no usable provider" only while one is chosen; from an
 * operation it is the provider's own failure (libfabric's "No data
 * available"), as is any -FI_E* code without a namesake. ENOMEM is
 * PS_COMM_ERR_NOMEM at every stage.
 */
enum psc_err_stage {
	PSC_ERR_OP,	 /* an operation, or any call not listed below */
	PSC_ERR_OPEN,	 /* choosing a provider and opening an endpoint */
	PSC_ERR_BOOT,	 /* the bootstrap: rendezvous, record exchange */
	PSC_ERR_CONNECT, /* reaching one peer by address (the van) */
	PSC_ERR_LOCAL,	 /* setting up a local facility: socket, thread */
};

/*
 * The PS_COMM_ERR_* value for internal code err raised at stage (0 and
 * positive values give PS_COMM_OK). Pure, thread-safe; every result has
 * a message in ps_comm_strerror.
 */
int psc_err_public(int err, enum psc_err_stage stage);

/* psc_err_public(err, PSC_ERR_OP): the translation for operations. */
int psc_err_from_fi(int err);

#endif /* PSC_ERR_H */
