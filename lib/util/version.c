/*
 * The library's version string: in the base layer, because the bootstrap
 * (lib/boot) writes it into every rank's record and ps_comm_info prints
 * it, and the layers below lib/comm may not call up.
 */
#include "ps_comm.h"

#define STR2(x) #x
#define STR(x) STR2(x)

const char *ps_comm_version(void)
{
	return STR(PS_COMM_VERSION_MAJOR) "." STR(PS_COMM_VERSION_MINOR) "."
		STR(PS_COMM_VERSION_PATCH);
}
