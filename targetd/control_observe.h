/*
 * The control methods of observation: workload histograms (histo,
 * histo.on, histo.off, histo.reset) and command traces (trace.start,
 * trace.stop, trace.status). Each takes the request's params (an object)
 * and returns the result, or NULL with e filled. They run on the control
 * thread and read the runtime under reload_read_lock().
 *
 * Parameters (targetctl(8), CONTROL PROTOCOL):
 *   histo        target? lun initiator?
 *   histo.on     target? lun initiator?   (initiator: keep a set for it)
 *   histo.off    target? lun initiator?   (initiator: stop keeping it)
 *   histo.reset  target? lun initiator?
 *   trace.start  target? lun? initiator? file? max_mb? data?
 *   trace.stop, trace.status
 * target may be left out when the daemon serves one target.
 */
#ifndef TARGETD_CONTROL_OBSERVE_H
#define TARGETD_CONTROL_OBSERVE_H

#include <json-c/json.h>

enum observe_code {
	OBS_E_PARAMS = 1,       /* a parameter missing or invalid */
	OBS_E_NOT_FOUND,        /* no such target, LUN, initiator set */
	OBS_E_REFUSED,          /* not now (a trace runs, the file exists, sets full) */
	OBS_E_FAILED,           /* tried and failed */
};

struct observe_err {
	int code;
	char msg[512];
};

typedef struct json_object *(*observe_fn)(struct json_object *params, struct observe_err *e);

struct json_object *observe_histo(struct json_object *p, struct observe_err *e);
struct json_object *observe_histo_on(struct json_object *p, struct observe_err *e);
struct json_object *observe_histo_off(struct json_object *p, struct observe_err *e);
struct json_object *observe_histo_reset(struct json_object *p, struct observe_err *e);
struct json_object *observe_trace_start(struct json_object *p, struct observe_err *e);
struct json_object *observe_trace_stop(struct json_object *p, struct observe_err *e);
struct json_object *observe_trace_status(struct json_object *p, struct observe_err *e);

#endif
