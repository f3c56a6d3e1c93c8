/*
 * Preflight: the environment checks that make a provider work instead of
 * failing with an opaque error later. Before the first fi_getinfo it sets
 * what providers read once at load time (fork safety, psm2/psm3/opx job
 * UUIDs, shm without cross-memory attach where that is blocked, the
 * universe size from the job's size); after an
 * entry is chosen it checks what that entry needs (RLIMIT_MEMLOCK for
 * pinned memory, /dev/shm for shm) and logs what a user debugging the
 * fabric wants to see (the RoCE GID, the NIC's locality). Every warning
 * names its fix. The families' variables come from their profiles'
 * data, so nothing here compares provider names.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <sys/uio.h>
#include <unistd.h>

#include "fabric/preflight.h"
#include "fabric/topo.h"
#include "net/auth.h"
#include "util/log.h"
#include "util/param.h"
#include "util/util.h"

/* Below this, a provider that pins memory fails as soon as it scales. */
#define PSC_MEMLOCK_MIN (64ULL << 20)
/* Below this free space, shm cannot map its queues for many ranks. */
#define PSC_DEVSHM_MIN (128ULL << 20)

/*
 * libfabric's FI_UNIVERSE_SIZE when unset (1.11 and later): the peers
 * rxm sizes the completion queue of its connections for, and the first
 * size of an AV that asks for none.
 */
#define PSC_FI_UNIVERSE_DEFAULT 1024

static pthread_mutex_t env_lock = PTHREAD_MUTEX_INITIALIZER;
static bool env_done;
/* FI_UNIVERSE_SIZE as libfabric reads it, and who set it. */
static size_t universe = PSC_FI_UNIVERSE_DEFAULT;
static enum psc_universe_from universe_from = PSC_UNIVERSE_DEFAULT;
/* The chosen provider cannot survive fork(): the atfork handler warns. */
static volatile int fork_unsafe_in_use;

static void warn_fork(void)
{
	if (fork_unsafe_in_use)
		psc_log(PSC_LOG_WARN, -1, "fork() while an RDMA provider is "
			"open: the child must not use pscomm, and pages "
			"registered with the NIC are not shared with it (use "
			"posix_spawn, or fork before ps_comm_init)");
}

/* Job identity: the same text on every rank of one job, not across jobs. */
static const char *const job_vars[] = {
	"PS_COMM_ROOT",	     "MASTER_ADDR",	    "MASTER_PORT",
	"DMLC_PS_ROOT_URI",  "DMLC_PS_ROOT_PORT",   "SLURM_JOB_ID",
	"SLURM_STEP_ID",     "PMIX_NAMESPACE",	    "PBS_JOBID",
	"LSB_JOBID",	     "OMPI_MCA_ess_base_jobid",
};

void psc_preflight_job_uuid(const struct psc_params *p, char *buf,
			    size_t len)
{
	const char *key = p ? p->job_key : getenv("PS_COMM_JOB_KEY");
	struct psc_auth_key k;
	uint8_t h[16];
	char text[4096], err[128];
	size_t used = 0;

	/*
	 * A keyed hash (the key's own sub-key) of the job's identity: the
	 * UUID travels in the provider's traffic, and an offline search of
	 * it costs a stretched-key derivation per guess, as every MAC does.
	 */
	if (psc_auth_key_load(&k, key ? key : "", err, sizeof(err)) != 0)
		psc_auth_key_load(&k, "", err, sizeof(err));
	text[0] = '\0';
	for (size_t i = 0; i < PSC_ARRAY_SIZE(job_vars); i++) {
		const char *v = getenv(job_vars[i]);

		/* Name and value, so "a"+"bc" differs from "ab"+"c". */
		PSC_APPEND(text, sizeof(text), used, "%s%c%s%c", job_vars[i],
			   v ? '=' : '!', v ? v : "", 0x1f);
	}
	psc_auth_job_hash(&k, text, PSC_MIN(used, sizeof(text) - 1), h,
			  sizeof(h));
	memset(&k, 0, sizeof(k));
	snprintf(buf, len, "%08" PRIx64 "-%04" PRIx64 "-%04" PRIx64
		 "-%04" PRIx64 "-%012" PRIx64, psc_be_get(h, 4),
		 psc_be_get(h + 4, 2), psc_be_get(h + 6, 2),
		 psc_be_get(h + 8, 2), psc_be_get(h + 10, 6));
}

/* Whether this process holds CAP_SYS_PTRACE (bit 19 of CapEff). */
static bool has_cap_sys_ptrace(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	bool yes = false;

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long eff;

		/* The kernel writes 16 hex digits: no overflow to detect. */
		/* NOLINTNEXTLINE(cert-err34-c) */
		if (sscanf(line, "CapEff: %llx", &eff) == 1) {
			yes = (eff >> 19) & 1;
			break;
		}
	}
	fclose(f);
	return yes;
}

/* Yama's ptrace_scope, or 0 when Yama is absent. */
static int yama_scope(void)
{
	FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "r");
	int v = 0;

	if (!f)
		return 0;
	/* A kernel file holding 0..3. */
	/* NOLINTNEXTLINE(cert-err34-c) */
	if (fscanf(f, "%d", &v) != 1)
		v = 0;
	fclose(f);
	return v;
}

bool psc_preflight_cma_works(void)
{
	char src[8] = "pscomm", dst[8] = "";
	struct iovec l = {dst, sizeof(dst)}, r = {src, sizeof(src)};

	/*
	 * A seccomp filter (docker's default without CAP_SYS_PTRACE) refuses
	 * the call outright, even on oneself; Yama refuses it between the
	 * sibling ranks of a job unless the process may ptrace them.
	 */
	if (process_vm_readv(getpid(), &l, 1, &r, 1, 0) != sizeof(src) ||
	    memcmp(src, dst, sizeof(src)) != 0)
		return false;
	return yama_scope() == 0 || has_cap_sys_ptrace();
}

/*
 * Families that copy large messages with CMA (shm) must not where it is
 * blocked: set their no_cma_env.
 */
static void no_cma(const struct psc_provider_ops *o, int rank)
{
	if (!o->no_cma_env || getenv(o->no_cma_env) ||
	    psc_preflight_cma_works())
		return;
	setenv(o->no_cma_env, "1", 0);
	psc_log(PSC_LOG_INFO, rank, "cross-memory attach is blocked "
		"here (container seccomp or Yama ptrace_scope %d), so %s "
		"copies through its own buffers (%s=1); for full speed run "
		"the container with --cap-add SYS_PTRACE or set "
		"kernel.yama.ptrace_scope=0", yama_scope(), o->name,
		o->no_cma_env);
}

/* Set name=value unless the user set it; log what was done. */
static void set_default(const char *name, const char *value,
			const char *why, int rank)
{
	if (getenv(name))
		return;
	setenv(name, value, 0);
	psc_log(PSC_LOG_DEBUG, rank, "set %s=%s (%s)", name, value, why);
}

/*
 * Size libfabric's per-peer structures for the job: FI_UNIVERSE_SIZE,
 * read once when libfabric initialises, unless the user set it. rxm
 * sizes the completion queue of its connections by it ((128 + 128) x
 * universe entries on verbs), which a device may refuse (soft-RoCE rxe
 * holds 32,767) and which costs tcp ranks about 12 MiB at the default.
 * Never above libfabric's default: rxm connects on demand, so a large
 * job keeps what it had, and the universe is only a sizing hint.
 */
static void size_universe(int ranks, int rank)
{
	const char *v = getenv("FI_UNIVERSE_SIZE");
	size_t n;
	char text[32];

	if (v) {
		if (psc_param_parse_size(v, &n) == 0 && n > 0) {
			universe = n;
			universe_from = PSC_UNIVERSE_USER;
		}
		return;
	}
	if (ranks <= 0)
		return;
	n = PSC_MIN((size_t)ranks, (size_t)PSC_FI_UNIVERSE_DEFAULT);
	snprintf(text, sizeof(text), "%zu", n);
	setenv("FI_UNIVERSE_SIZE", text, 0);
	universe = n;
	universe_from = PSC_UNIVERSE_JOB;
	psc_log(PSC_LOG_DEBUG, rank, "set FI_UNIVERSE_SIZE=%zu (the job's %d "
		"ranks, at most libfabric's default %d)", n, ranks,
		PSC_FI_UNIVERSE_DEFAULT);
}

size_t psc_preflight_universe(enum psc_universe_from *from)
{
	size_t n;

	pthread_mutex_lock(&env_lock);
	n = universe;
	if (from)
		*from = universe_from;
	pthread_mutex_unlock(&env_lock);
	return n;
}

void psc_preflight_env(const struct psc_params *p, int rank, int ranks)
{
	size_t n;
	const struct psc_provider_ops *all = psc_provider_all(&n);
	char uuid[40];

	/*
	 * Once per process: providers read these when libfabric loads them,
	 * at the first fi_getinfo. setenv is not safe against concurrent
	 * getenv, which is why this runs inside ps_comm_init only.
	 */
	pthread_mutex_lock(&env_lock);
	if (env_done) {
		pthread_mutex_unlock(&env_lock);
		return;
	}
	env_done = true;
	size_universe(ranks, rank);
	psc_preflight_job_uuid(p, uuid, sizeof(uuid));
	for (size_t i = 0; i < n; i++) {
		if (all[i].fork_env)
			set_default(all[i].fork_env, "1", "fork safety must "
				    "be set before the device is opened",
				    rank);
		if (all[i].uuid_env)
			set_default(all[i].uuid_env, uuid, "one UUID per "
				    "job, derived from the job's identity",
				    rank);
		no_cma(&all[i], rank);
	}
	pthread_atfork(warn_fork, NULL, NULL);
	pthread_mutex_unlock(&env_lock);
}

/* Human size: "8 MiB". */
static void fmt_mib(unsigned long long v, char *buf, size_t len)
{
	if (v >= (1ULL << 20))
		snprintf(buf, len, "%llu MiB", v >> 20);
	else
		snprintf(buf, len, "%llu KiB", v >> 10);
}

static void check_memlock(const struct fi_info *info, int rank)
{
	struct rlimit rl;
	char have[32];

	if (getrlimit(RLIMIT_MEMLOCK, &rl) != 0 ||
	    rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= PSC_MEMLOCK_MIN)
		return;
	/* Raising the soft limit to the hard one needs no privilege. */
	if (rl.rlim_max == RLIM_INFINITY || rl.rlim_max > rl.rlim_cur) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_MEMLOCK, &rl) == 0 &&
		    (rl.rlim_cur == RLIM_INFINITY ||
		     rl.rlim_cur >= PSC_MEMLOCK_MIN))
			return;
	}
	fmt_mib(rl.rlim_cur, have, sizeof(have));
	psc_log(PSC_LOG_WARN, rank, "RLIMIT_MEMLOCK is %s, but %s pins "
		"registered memory; registrations will fail once it is "
		"used up. Fix: `ulimit -l unlimited` before the launch, "
		"\"* - memlock unlimited\" in /etc/security/limits.conf, "
		"`docker run --ulimit memlock=-1`, or LimitMEMLOCK=infinity "
		"for systemd-started daemons (Slurm: "
		"PropagateResourceLimitsExcept=MEMLOCK)", have,
		info->fabric_attr->prov_name);
}

static void check_devshm(int rank)
{
	struct statvfs st;
	unsigned long long avail;
	char have[32];

	if (statvfs("/dev/shm", &st) != 0) {
		psc_log(PSC_LOG_WARN, rank, "/dev/shm is missing (%s): the "
			"shm provider needs it. Fix: mount a tmpfs there, or "
			"FI_PROVIDER=tcp", strerror(errno));
		return;
	}
	avail = (unsigned long long)st.f_bavail * st.f_frsize;
	if (avail >= PSC_DEVSHM_MIN)
		return;
	fmt_mib(avail, have, sizeof(have));
	psc_log(PSC_LOG_WARN, rank, "/dev/shm has only %s free; shm maps "
		"its queues there and fails with several ranks. Fix: `docker "
		"run --shm-size=1g` (Kubernetes: an emptyDir with medium "
		"Memory), or `mount -o remount,size=1G /dev/shm`", have);
}

/* Read one line of a sysfs file into buf, without its newline. */
static bool read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	bool ok;

	if (!f)
		return false;
	ok = fgets(buf, (int)len, f) != NULL;
	fclose(f);
	if (ok)
		buf[strcspn(buf, "\n")] = '\0';
	return ok;
}

/*
 * Log the GID a RoCE port uses (the profile's gid_env, default 0), its
 * RoCE version and netdev, and warn when the port has several GIDs but
 * no index was chosen.
 */
static void log_roce_gid(const struct fi_info *info, const char *var,
			 int rank)
{
	const char *dev = info->nic && info->nic->device_attr &&
					  info->nic->device_attr->name
				  ? info->nic->device_attr->name
				  : info->domain_attr->name;
	const char *idx_env = getenv(var);
	int idx = 0, valid = 0;
	char path[256], gid[64] = "?", type[32] = "?", ndev[32] = "?";

	if (!dev)
		return;
	/* atoi would read "x" or "1x" as an index; show such a value as 0. */
	if (idx_env && (psc_param_parse_int(idx_env, &idx) != 0 || idx < 0))
		idx = 0;
	for (int k = 0; k < 16; k++) {
		char g[64];

		snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/"
			 "1/gids/%d", dev, k);
		if (read_line(path, g, sizeof(g)) &&
		    strspn(g, "0:") != strlen(g))
			valid++;
	}
	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/1/gids/"
		 "%d", dev, idx);
	read_line(path, gid, sizeof(gid));
	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/1/"
		 "gid_attrs/types/%d", dev, idx);
	read_line(path, type, sizeof(type));
	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/1/"
		 "gid_attrs/ndevs/%d", dev, idx);
	read_line(path, ndev, sizeof(ndev));
	psc_log(PSC_LOG_INFO, rank, "RoCE device %s port 1 GID index %d%s%s%s: "
		"%s (%s, netdev %s)", dev, idx, idx_env ? " (from " : "",
		idx_env ? var : "", idx_env ? ")" : "", gid, type, ndev);
	if (!idx_env && valid > 1)
		psc_log(PSC_LOG_WARN, rank, "RoCE device %s has %d GIDs "
			"(RoCE v1/v2, IPv4/IPv6); pscomm uses index 0. Set "
			"%s to the same RoCE v2 index on every rank "
			"(`show_gids` lists them)", dev, valid, var);
}

int psc_preflight_check(const struct fi_info *info,
			const struct psc_caps *caps, int nic_distance,
			int rank, char *err, size_t len)
{
	const struct psc_provider_ops *prov =
		psc_provider_lookup(info->fabric_attr->prov_name);

	(void)err;
	(void)len;
	if (caps->needs_memlock || caps->mr_local)
		check_memlock(info, rank);
	if (caps->link == PSC_LINK_SHM)
		check_devshm(rank);
	if (caps->link == PSC_LINK_ROCE && prov->gid_env)
		log_roce_gid(info, prov->gid_env, rank);
	if (caps->fork_unsafe)
		fork_unsafe_in_use = 1;
	if (caps->nic_local && psc_log_enabled(PSC_LOG_INFO)) {
		char nic[256];
		void *topo = psc_topo_open();

		psc_topo_nic_describe(info, topo, nic, sizeof(nic));
		psc_topo_close(topo);
		psc_log(PSC_LOG_INFO, rank, "NIC %s%s", nic,
			nic_distance == 2 ? "; far from this process's CPUs: "
			"bind ranks near their NIC (--bind-to numa)" : "");
	}
	return 0;
}
