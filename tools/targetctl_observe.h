/*
 * targetctl's observation commands: histo (workload histograms as a text
 * chart or JSON) and trace (start, stop, status, dump). argv[0] is the
 * command's name; the rest are its words and options.
 */
#ifndef TOOLS_TARGETCTL_OBSERVE_H
#define TOOLS_TARGETCTL_OBSERVE_H

#include <stdbool.h>
#include <json-c/json.h>

struct tc_observe {
	/* Call a control method (params consumed): its result; on an error
	 * print it and exit 1. */
	struct json_object *(*call)(const char *method, struct json_object *params);
	bool json;                  /* --json given before the command */
};

int tc_observe_histo(int argc, char **argv, const struct tc_observe *io);
int tc_observe_trace(int argc, char **argv, const struct tc_observe *io);
/* The text chart of one histo answer (exposed for trace dump summaries). */
void tc_observe_histo_print(struct json_object *r);

#endif
