/*
 * Error conventions inside pscomm. Internal functions return 0 or a
 * negative errno or -FI_E* code, never a PS_COMM_ERR_* value, so the two
 * spaces cannot be confused (-12 is -ENOMEM inside, PS_COMM_ERR_CONFIG
 * outside). Where a failure needs words, the function also takes a
 * message buffer (char *err, size_t len) and writes one line into it.
 * The communicator layer turns codes into PS_COMM_ERR_* values with
 * psc_err_from_fi and records the words as ps_comm_last_error.
 *
 * Conditions with no obvious errno use these, everywhere:
 *   -FI_ETRUNC    message longer than the receive buffer
 *   -FI_ECANCELED operation cancelled
 *   -ETIMEDOUT    a deadline passed
 *   -ESHUTDOWN    the communicator was aborted
 *   -EBADE        ranks disagree (settings, counts, data types)
 *   -EPROTO       malformed or foreign message
 *   -ENODATA      no usable provider
 *   -ENOTRECOVERABLE  internal error
 */
#ifndef PSC_ERR_H
#define PSC_ERR_H

/*
 * The PS_COMM_ERR_* value for an internal code (0 stays 0). Codes from
 * the list above map to their namesakes; connection errors to
 * PS_COMM_ERR_PEER; EINVAL to PS_COMM_ERR_ARG; other -FI_E* codes to
 * PS_COMM_ERR_PROVIDER and other errnos to PS_COMM_ERR_SYSTEM.
 */
int psc_err_from_fi(int err);

#endif /* PSC_ERR_H */
