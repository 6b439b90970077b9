/*
 * The workload histograms of scsi/histo.h as the daemon shows them: JSON
 * (the control socket's histo method, the dashboard) and Prometheus
 * histograms (/metrics). Readers only: run on the control or HTTP thread,
 * under reload_read_lock() like every other reader of the runtime.
 */
#ifndef TARGETD_HISTO_OUT_H
#define TARGETD_HISTO_OUT_H

#include <stdio.h>
#include <json-c/json.h>

struct scsi_lun;

/*
 * One LUN's histograms (initiator NULL: all initiators), NULL when that
 * initiator has no set. Shape:
 *   {"target":..., "lun":N, "enabled":bool, "initiator":null|"iqn",
 *    "initiators":["iqn", ...],
 *    "histograms":{"io_length":{"title":..., "unit":"bytes",
 *        "edges":[512, ...],
 *        "read":{"buckets":[...], "count":N, "sum":S}, "write":..., "all":...},
 *      ...}}
 * Buckets hold values <= their edge, the last one the rest (one more
 * bucket than edges). Times are in microseconds (unit "us").
 */
struct json_object *histo_lun_json(const char *target, struct scsi_lun *lun, const char *initiator);

/* Prometheus histograms for every LUN given (lun[i] of target iqn[i]),
 * families targetd_workload_*; LUNs with histograms off and empty are
 * left out. */
struct histo_lun_ref {
	const char *iqn;
	struct scsi_lun *lun;
};
void histo_prometheus(FILE *f, const struct histo_lun_ref *l, unsigned n);

#endif
