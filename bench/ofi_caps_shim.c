/*
 * ofi_caps_shim.c - LD_PRELOAD wrapper for the Open MPI references of the
 * bench scripts (bench/mpi_common.sh builds it). Open MPI 4.1's OFI MTL
 * asks fi_getinfo() for FI_LOCAL_COMM|FI_REMOTE_COMM (hard-coded, no MCA
 * knob); libfabric's shm provider only does local communication and does
 * not advertise these bits, so Open MPI can never pick it. This wrapper
 * drops the two bits from the hints and calls the real fi_getinfo. It is
 * used for the shm provider only: all ranks are on one node, so local-only
 * communication is all that is needed. Link with -ldl -lfabric and the
 * version script FABRIC_1.3 so that Open MPI's versioned call binds here.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <rdma/fabric.h>

typedef int (*getinfo_fn)(uint32_t, const char *, const char *, uint64_t,
			  const struct fi_info *, struct fi_info **);

int fi_getinfo(uint32_t version, const char *node, const char *service,
	       uint64_t flags, const struct fi_info *hints,
	       struct fi_info **info)
{
	static getinfo_fn real;
	struct fi_info *h;
	int ret;

	if (!real)
		real = (getinfo_fn)dlvsym(RTLD_NEXT, "fi_getinfo",
					  "FABRIC_1.3");
	if (!real)
		return -FI_ENOSYS;
	if (!hints || !(hints->caps & (FI_LOCAL_COMM | FI_REMOTE_COMM)))
		return real(version, node, service, flags, hints, info);
	h = fi_dupinfo(hints);
	if (!h)
		return -FI_ENOMEM;
	h->caps &= ~(uint64_t)(FI_LOCAL_COMM | FI_REMOTE_COMM);
	ret = real(version, node, service, flags, h, info);
	fi_freeinfo(h);
	return ret;
}
