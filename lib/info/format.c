/*
 * How the fabric report spells values: byte counts, mr_mode bits, source
 * addresses and lists, each written into a caller's buffer, truncated to
 * fit and always NUL-terminated.
 */
#include <stdio.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>

#include "info/info_int.h"
#include "util/util.h"

void psc_info_fmt_size(size_t v, char *buf, size_t len)
{
	static const char units[] = "KMGT";
	unsigned u = 0;
	size_t n = v;

	if (v == SIZE_MAX) {
		snprintf(buf, len, "SIZE_MAX");
		return;
	}
	while (n >= 1024 && n % 1024 == 0 && u < sizeof(units) - 1) {
		n /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%zu", v);
	else
		snprintf(buf, len, "%zu%ci", n, units[u - 1]);
}

void psc_info_fmt_mr_mode(int mr, char *buf, size_t len)
{
	static const struct {
		int bit;
		const char *name;
	} bits[] = {
		{FI_MR_LOCAL, "LOCAL"},
		{FI_MR_RAW, "RAW"},
		{FI_MR_VIRT_ADDR, "VIRT_ADDR"},
		{FI_MR_ALLOCATED, "ALLOCATED"},
		{FI_MR_PROV_KEY, "PROV_KEY"},
		{FI_MR_MMU_NOTIFY, "MMU_NOTIFY"},
		{FI_MR_RMA_EVENT, "RMA_EVENT"},
		{FI_MR_ENDPOINT, "ENDPOINT"},
		{FI_MR_HMEM, "HMEM"},
		{FI_MR_COLLECTIVE, "COLLECTIVE"},
	};
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < PSC_ARRAY_SIZE(bits); i++) {
		if (!(mr & bits[i].bit))
			continue;
		mr &= ~bits[i].bit;
		PSC_APPEND(buf, len, used, "%s%s", used ? "|" : "", bits[i].name);
	}
	/* Legacy FI_MR_BASIC/SCALABLE values or bits newer than 1.17. */
	if (mr)
		PSC_APPEND(buf, len, used, "%s0x%x", used ? "|" : "",
		       (unsigned)mr);
	if (!used)
		snprintf(buf, len, "none");
}

void psc_info_fmt_src_addr(const struct fi_info *i, char *buf, size_t len)
{
	const uint8_t *b = i->src_addr;
	size_t used = 0;

	if (!i->src_addr || !i->src_addrlen) {
		snprintf(buf, len, "none");
		return;
	}
	switch (i->addr_format) {
	case FI_SOCKADDR:
	case FI_SOCKADDR_IN:
	case FI_SOCKADDR_IN6:
		psc_sockaddr_str(i->src_addr, buf, len);
		return;
	case FI_ADDR_STR:
		snprintf(buf, len, "%.*s", (int)i->src_addrlen,
			 (const char *)i->src_addr);
		return;
	default:
		/* Opaque formats: the first bytes tell entries apart. */
		buf[0] = '\0';
		for (size_t k = 0; k < PSC_MIN(i->src_addrlen, 16); k++)
			PSC_APPEND(buf, len, used, "%02x", b[k]);
		/* PSC_APPEND counts for a next append; there is none. */
		if (i->src_addrlen > 16)
			/* cppcheck-suppress unreadVariable */
			PSC_APPEND(buf, len, used, "...");
	}
}

const char *psc_info_nz(const char *s)
{
	return s ? s : "?";
}

void psc_info_list_add(char *buf, size_t len, const char *s)
{
	size_t used = strlen(buf), n = strlen(s);

	for (const char *p = buf; (p = strstr(p, s)); p += n)
		if ((p == buf || p[-1] == ' ') && (p[n] == ',' || !p[n]))
			return;
	snprintf(buf + used, len - used, "%s%s", used ? ", " : "", s);
}
