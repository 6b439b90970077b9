/*
 * libFuzzer harness: text negotiation (targetd/params.c) on its own.
 *
 * Input: one byte of settings (leading connection, discovery session, the
 * target's digest and R2T choices), then a key=value data segment. Every
 * key is negotiated; then the checks that must hold whatever came in: the
 * response the target would send parses back as key=value pairs, the
 * negotiated values are within their RFC 7143 ranges, and FirstBurstLength
 * does not exceed MaxBurstLength.
 */
#include "config.h"
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "targetd/params.h"

#define MAX_KEYS 512

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct iscsi_kv kv[MAX_KEYS], back[2 * MAX_KEYS + 8];
	struct iscsi_limits lim = { .max_recv_dsl = 262144, .max_burst = 1048576,
				    .first_burst = 65536, .max_outstanding_r2t = 1,
				    .max_connections = 8 };
	struct iscsi_params p;
	struct iscsi_text resp = { 0 };
	bool leading, discovery;
	char *text;
	int n;

	if (size < 1 || size > ISCSI_TEXT_MAX + 1)
		return 0;
	leading = data[0] & 1;
	discovery = data[0] & 2;
	lim.allow_crc32c = data[0] & 4;
	lim.require_crc32c = lim.allow_crc32c && (data[0] & 8);
	lim.immediate_data = data[0] & 16;
	lim.initial_r2t = data[0] & 32;
	text = malloc(size);
	if (!text)
		return 0;
	memcpy(text, data + 1, size - 1);
	iscsi_params_init(&p, &lim);
	n = iscsi_kv_parse(text, size - 1, kv, MAX_KEYS);
	for (int i = 0; i < n; i++)
		if (iscsi_params_negotiate(&p, &lim, leading, discovery, kv[i].key, kv[i].value,
					   &resp) == NEG_FATAL)
			break;
	iscsi_params_finish(&p, &lim, discovery, &resp);
	if (resp.len && iscsi_kv_parse(resp.data, resp.len, back, (int)(sizeof(back) / sizeof(back[0]))) < 0)
		abort();            /* we would send what we cannot parse */
	if (p.max_recv_dsl_initiator < 512 || p.max_recv_dsl_initiator > 16777215 ||
	    p.max_burst < 512 || p.max_burst > 16777215 || p.first_burst < 512 ||
	    p.max_connections < 1 || p.max_connections > 65535 ||
	    p.max_outstanding_r2t < 1 || p.error_recovery_level > 2 ||
	    (!discovery && p.first_burst > p.max_burst))
		abort();
	iscsi_text_free(&resp);
	free(text);
	return 0;
}
