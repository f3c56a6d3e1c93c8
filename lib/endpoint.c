/*
 * The endpoint: hints, choosing one fi_info entry (honouring FI_PROVIDER
 * and, for IP providers, the interface chosen for this rank), and opening
 * fabric, domain, endpoint, CQ and AV as a staged sequence that unwinds on
 * error. Closing follows libfabric's order: endpoint, then CQ and AV, then
 * domain and fabric.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_cm.h>
#include <rdma/fi_errno.h>

#include "psc.h"


struct fi_info *psc_ep_hints(const char *prov_name)
{
	struct fi_info *h = fi_allocinfo();

	if (!h)
		return NULL;
	h->caps = FI_TAGGED | FI_MSG | FI_DIRECTED_RECV;
	h->mode = FI_CONTEXT | FI_CONTEXT2;
	h->ep_attr->type = FI_EP_RDM;
	h->domain_attr->av_type = FI_AV_TABLE;
	h->domain_attr->resource_mgmt = FI_RM_ENABLED;
	h->domain_attr->threading = FI_THREAD_DOMAIN;
	/* No FI_MR_LOCAL yet: providers then register internally. */
	h->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				  FI_MR_PROV_KEY | FI_MR_ENDPOINT;
	h->tx_attr->msg_order = FI_ORDER_SAS;
	h->rx_attr->msg_order = FI_ORDER_SAS;
	if (prov_name) {
		h->fabric_attr->prov_name = strdup(prov_name);
		if (!h->fabric_attr->prov_name) {
			fi_freeinfo(h);
			return NULL;
		}
		psc_provider_lookup(prov_name)->fixup_hints(h);
	}
	return h;
}

/* Append "name (reason)" to a list of rejected providers once per name. */
static void note_reject(char *buf, size_t len, const char *name,
			const char *why)
{
	size_t used = strlen(buf);

	if (strstr(buf, name))
		return;
	snprintf(buf + used, len - used, "%s%s (%s)", used ? "; " : "", name,
		 why);
}

/* The providers installed in libfabric, for "nothing usable" errors. */
static void installed_providers(char *buf, size_t len)
{
	struct fi_info *all = NULL;
	size_t used = 0;

	buf[0] = '\0';
	if (fi_getinfo(PSC_FI_VERSION, NULL, NULL, FI_PROV_ATTR_ONLY, NULL,
		       &all) != 0)
		return;
	for (struct fi_info *i = all; i; i = i->next) {
		const char *n = i->fabric_attr->prov_name;

		/* Utility and hook providers are layered, not chosen. */
		if (!n || strncmp(n, "ofi_", 4) == 0 || strstr(buf, n))
			continue;
		used += (size_t)snprintf(buf + PSC_MIN(used, len),
					 len - PSC_MIN(used, len), "%s%s",
					 used ? ", " : "", n);
	}
	fi_freeinfo(all);
}

/*
 * Pick the first acceptable entry. For IP-addressed providers, the entry
 * must carry the chosen interface's address.
 */
static struct fi_info *choose_entry(struct fi_info *list,
				    const struct psc_iface *iface,
				    char *rejects, size_t rlen)
{
	for (struct fi_info *i = list; i; i = i->next) {
		const char *name = i->fabric_attr->prov_name;
		const struct psc_provider_ops *p = psc_provider_lookup(name);
		struct psc_caps caps;
		char why[160];

		if (!p->accept(i, why, sizeof(why))) {
			note_reject(rejects, rlen, name, why);
			continue;
		}
		p->derive_caps(i, &caps);
		if (caps.ip_addressed && iface &&
		    (!i->src_addr ||
		     !psc_sockaddr_same_ip(i->src_addr,
					   (struct sockaddr *)&iface->addr)))
			continue;
		return i;
	}
	return NULL;
}

static int ep_choose(struct psc_ep *ep, const struct psc_ep_config *cfg,
		     char *err, size_t len)
{
	struct fi_info *hints = psc_ep_hints(NULL), *list = NULL, *pick;
	const char *filter = getenv("FI_PROVIDER");
	char rejects[512] = "", installed[256];
	int rc;

	if (!hints)
		return -ENOMEM;
	rc = fi_getinfo(PSC_FI_VERSION, NULL, NULL, 0, hints, &list);
	fi_freeinfo(hints);
	pick = rc == 0 ? choose_entry(list, cfg->iface, rejects,
				      sizeof(rejects))
		       : NULL;
	if (!pick) {
		installed_providers(installed, sizeof(installed));
		snprintf(err, len, "no usable libfabric provider%s%s%s%s. "
			 "Providers installed here: %s. Unset FI_PROVIDER or "
			 "set it to one of them; `ps_comm_info` shows which "
			 "work on this machine and why",
			 filter ? " for FI_PROVIDER=" : "",
			 filter ? filter : "",
			 cfg->iface && rc == 0 ? " on interface " : "",
			 cfg->iface && rc == 0 ? cfg->iface->name : "",
			 installed);
		if (rejects[0]) {
			size_t u = strlen(err);

			snprintf(err + u, len - u, " (rejected: %s)", rejects);
		}
		fi_freeinfo(list);
		return -ENODATA;
	}
	ep->info = fi_dupinfo(pick);
	fi_freeinfo(list);
	if (!ep->info)
		return -ENOMEM;
	ep->prov = psc_provider_lookup(ep->info->fabric_attr->prov_name);
	ep->prov->derive_caps(ep->info, &ep->caps);
	if (cfg->params->max_msg_size &&
	    cfg->params->max_msg_size < ep->caps.max_msg_size)
		ep->caps.max_msg_size = cfg->params->max_msg_size;
	if (ep->caps.inject_size > ep->caps.max_msg_size)
		ep->caps.inject_size = ep->caps.max_msg_size;
	if (cfg->params->sw_match == 1)
		ep->caps.sw_match = true;
	/* Leave a quarter of the receive pool for unexpected messages. */
	ep->post_limit[0] = PSC_MIN(ep->caps.tx_size, 64);
	ep->post_limit[1] = ep->caps.rx_size - ep->caps.rx_size / 4;
	/* The tag rides in the CQ data where the profile trusts it. */
	ep->sw_tag_in_data = ep->caps.sw_tag_in_data;
	/* Untagged eager messages must fit one provider message. */
	ep->sw_eager = PSC_SW_EAGER;
	if (ep->caps.max_msg_size < PSC_SW_HDR + PSC_SW_EAGER)
		ep->sw_eager = ep->caps.max_msg_size > 2 * PSC_SW_HDR
				       ? ep->caps.max_msg_size - PSC_SW_HDR
				       : PSC_SW_HDR;
	return 0;
}

/* Open the CQ with the best wait object that works for this provider. */
static int open_cq(struct psc_ep *ep)
{
	struct fi_cq_attr attr = {0};
	int rc;

	attr.format = FI_CQ_FORMAT_TAGGED;
	/* At least tx + rx depth, so the CQ can never overrun. */
	attr.size = ep->caps.tx_size + ep->caps.rx_size;
	attr.wait_obj = ep->caps.wait_fd      ? FI_WAIT_FD
			: ep->caps.wait_sread ? FI_WAIT_UNSPEC
					      : FI_WAIT_NONE;
	rc = fi_cq_open(ep->domain, &attr, &ep->cq, NULL);
	if (rc && attr.wait_obj != FI_WAIT_NONE) {
		attr.wait_obj = FI_WAIT_NONE;
		rc = fi_cq_open(ep->domain, &attr, &ep->cq, NULL);
	}
	if (rc)
		return rc;
	ep->wait_mode = PSC_WAIT_POLL;
	if (attr.wait_obj == FI_WAIT_FD &&
	    fi_control(&ep->cq->fid, FI_GETWAIT, &ep->wait_fd) == 0)
		ep->wait_mode = PSC_WAIT_FD;
	else if (attr.wait_obj == FI_WAIT_UNSPEC)
		ep->wait_mode = PSC_WAIT_SREAD;
	return 0;
}

static const char *wait_mode_name(enum psc_wait_mode m)
{
	return m == PSC_WAIT_FD ? "wait fd" : m == PSC_WAIT_SREAD
						      ? "cq_sread"
						      : "poll+backoff";
}

/* What two communicators must share to share an endpoint. */
static void ep_key(const struct psc_ep_config *cfg, char *key, size_t len)
{
	const char *filter = getenv("FI_PROVIDER");

	snprintf(key, len, "prov=%s;if=%s;max=%zu;spin=%g;sw=%d",
		 filter ? filter : "", cfg->iface ? cfg->iface->addrstr : "",
		 cfg->params->max_msg_size, cfg->params->spin_us,
		 cfg->params->sw_match);
}

static int ep_open(struct psc_ep **out, const struct psc_ep_config *cfg,
		   char *err, size_t len)
{
	struct psc_ep *ep = calloc(1, sizeof(*ep));
	struct fi_av_attr av_attr = {0};
	const char *step;
	int rc;

	if (!ep)
		return -ENOMEM;
	pthread_mutex_init(&ep->lock, NULL);
	ep->wait_fd = -1;
	ep->rank = cfg->rank;
	ep->spin_us = cfg->params->spin_us;
	if (cfg->iface)
		snprintf(ep->iface, sizeof(ep->iface), "%s", cfg->iface->name);
	rc = ep_choose(ep, cfg, err, len);
	if (rc)
		goto err_free;
	rc = psc_tag_layout_init(&ep->tl, ep->caps.mem_tag_format);
	if (rc) {
		snprintf(err, len, "provider %s offers %u tag bits; pscomm "
			 "needs at least %d", ep->info->fabric_attr->prov_name,
			 ep->caps.tag_bits, PSC_TAG_PROTO_BITS + 1 +
			 PSC_TAG_CTX_BITS + PSC_TAG_RANK_BITS +
			 PSC_TAG_MIN_USER_BITS);
		goto err_free;
	}
	step = "fi_fabric";
	rc = fi_fabric(ep->info->fabric_attr, &ep->fabric, NULL);
	if (rc)
		goto err_step;
	step = "fi_domain";
	rc = fi_domain(ep->fabric, ep->info, &ep->domain, NULL);
	if (rc)
		goto err_close_fabric;
	step = "fi_cq_open";
	rc = open_cq(ep);
	if (rc)
		goto err_close_domain;
	step = "fi_av_open";
	av_attr.type = FI_AV_TABLE;
	rc = fi_av_open(ep->domain, &av_attr, &ep->av, NULL);
	if (rc)
		goto err_close_cq;
	step = "fi_endpoint";
	rc = fi_endpoint(ep->domain, ep->info, &ep->ep, NULL);
	if (rc)
		goto err_close_av;
	step = "fi_ep_bind/fi_enable";
	rc = fi_ep_bind(ep->ep, &ep->cq->fid, FI_TRANSMIT | FI_RECV);
	if (!rc)
		rc = fi_ep_bind(ep->ep, &ep->av->fid, 0);
	if (!rc)
		rc = fi_enable(ep->ep);
	if (rc)
		goto err_close_ep;
	step = "fi_getname";
	ep->namelen = sizeof(ep->name);
	rc = fi_getname(&ep->ep->fid, ep->name, &ep->namelen);
	if (rc)
		goto err_close_ep;
	step = "posting receive buffers";
	if (ep->caps.sw_match && (rc = psc_sw_open(ep)) != 0)
		goto err_close_ep;
	if (psc_log_enabled(PSC_LOG_DEBUG)) {
		char txt[128];
		size_t tl = sizeof(txt);

		if (!fi_av_straddr(ep->av, ep->name, txt, &tl))
			snprintf(txt, sizeof(txt), "(unprintable)");
		psc_log(PSC_LOG_DEBUG, ep->rank, "endpoint name %s (%zu bytes)",
			txt, ep->namelen);
	}
	psc_log(PSC_LOG_INFO, ep->rank, "provider %s, fabric %s, domain %s, "
		"tag bits %u (user tag %u bits), max_msg_size %zu, inject "
		"%zu, %s progress, waits by %s%s",
		ep->info->fabric_attr->prov_name, ep->info->fabric_attr->name,
		ep->info->domain_attr->name, ep->caps.tag_bits,
		ep->tl.user_bits, ep->caps.max_msg_size, ep->caps.inject_size,
		ep->caps.manual_progress ? "manual" : "auto",
		wait_mode_name(ep->wait_mode),
		ep->caps.sw_match ? ", software matching" : "");
	*out = ep;
	return 0;

err_close_ep:
	fi_close(&ep->ep->fid);
	while (ep->live)
		psc_req_free(ep->live);
err_close_av:
	fi_close(&ep->av->fid);
err_close_cq:
	fi_close(&ep->cq->fid);
err_close_domain:
	fi_close(&ep->domain->fid);
err_close_fabric:
	fi_close(&ep->fabric->fid);
err_step:
	snprintf(err, len, "%s on provider %s failed: %s", step,
		 ep->info->fabric_attr->prov_name, fi_strerror(-rc));
err_free:
	fi_freeinfo(ep->info);
	pthread_mutex_destroy(&ep->lock);
	free(ep);
	return rc;
}

int psc_ep_av_insert(struct psc_ep *ep, const void *addr, fi_addr_t *fi_addr)
{
	int rc;

	/* One at a time: string-format names (shm) vary in length. */
	pthread_mutex_lock(&ep->lock);
	rc = fi_av_insert(ep->av, addr, 1, fi_addr, 0, NULL);
	pthread_mutex_unlock(&ep->lock);
	if (rc < 0)
		return rc;
	return rc == 1 ? 0 : -EADDRNOTAVAIL;
}

int psc_ep_acquire(struct psc_ep **out, const struct psc_ep_config *cfg,
		   uint32_t *ctx, char *err, size_t len)
{
	char key[160];
	struct psc_ep *ep;
	int rc;

	ep_key(cfg, key, sizeof(key));
	ep = psc_ep_find_shared(key);
	if (!ep) {
		rc = ep_open(&ep, cfg, err, len);
		if (rc)
			return rc;
		snprintf(ep->key, sizeof(ep->key), "%s", key);
		psc_ep_register(ep);
	}
	pthread_mutex_lock(&ep->lock);
	*ctx = ep->next_ctx++ & ((1u << PSC_TAG_CTX_BITS) - 1);
	pthread_mutex_unlock(&ep->lock);
	*out = ep;
	return 0;
}

void psc_ep_release(struct psc_ep *ep)
{
	if (!ep || !psc_ep_unregister(ep))
		return;
	fi_close(&ep->ep->fid);
	fi_close(&ep->av->fid);
	fi_close(&ep->cq->fid);
	fi_close(&ep->domain->fid);
	fi_close(&ep->fabric->fid);
	/* No completion can arrive now: free what libfabric held. */
	while (ep->live)
		psc_req_free(ep->live);
	psc_sw_close(ep);
	fi_freeinfo(ep->info);
	pthread_mutex_destroy(&ep->lock);
	free(ep);
}
