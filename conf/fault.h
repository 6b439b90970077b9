/*
 * Fault-injection rules: the vocabulary of targetd-faults(7), shared by the
 * configuration's `faults` lists (conf/config.c) and the control socket's
 * "fault-add" (targetd/fault_ctl.c). A rule is a set of KEY = VALUE pairs;
 * every value is given as text (numbers too), checked here into a struct
 * fault_spec (common/fault_spec.h).
 *
 *   struct fault_spec s;
 *   conf_fault_init(&s);
 *   conf_fault_set(&s, "action", "medium-error", err, sizeof(err));
 *   conf_fault_set(&s, "lba", "100-199", err, sizeof(err));
 *   conf_fault_finish(&s, err, sizeof(err));   // defaults, cross-key checks
 */
#ifndef CONF_FAULT_H
#define CONF_FAULT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "common/fault_spec.h"

/* A rule being read: the spec plus which keys were written. */
struct conf_fault {
	struct fault_spec spec;
	uint64_t given;          /* bit per key of the table in conf/fault.c */
	char op_text[128];       /* "op" as written (listing) */
};

void conf_fault_init(struct conf_fault *f);
/* One key. Returns 0, or -1 with a message in err ("what is wrong, what to
 * write instead"); an unknown key says so (with the nearest known one). */
int conf_fault_set(struct conf_fault *f, const char *key, const char *value, char *err,
		   size_t errlen);
/* After the last key: scenario and action defaults, keys that do not go
 * with the action. Returns 0, or -1 with err and, in *bad_key, the key the
 * message is about (NULL: the rule as a whole). */
int conf_fault_finish(struct conf_fault *f, char *err, size_t errlen, const char **bad_key);
/* Whether "lun" may be written in the rule (a rule inside a LUN's group
 * gets its LUN from there). */
bool conf_fault_has_key(const struct conf_fault *f, const char *key);

/* The rule as KEY=VALUE words, keys in a fixed order (listing, logs). */
void conf_fault_format(const struct conf_fault *f, char *buf, size_t len);
/* Name of an action, of a scenario's action. */
const char *conf_fault_action_name(const struct fault_spec *s);

/* Durations: "250us", "20ms", "1.5s", "2m", "1h" (a unit is required
 * except for 0). Returns 0 or -1. */
int conf_parse_duration(const char *s, uint64_t *ns);

#endif
