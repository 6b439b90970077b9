/*
 * vaai-lab locking: the types shared by the engine (locking.c) and its
 * report (lockreport.c). See locking.c for the design.
 */
#ifndef VAAI_LAB_LOCKING_H
#define VAAI_LAB_LOCKING_H

#include "tools/lab/lab.h"

/* One second of a phase, by completion time. */
struct lock_sample {
	uint64_t vm_ios, conflicts, miscompares, updates;
};

/* What one mode measured. */
struct lock_phase {
	enum lock_mode mode;
	unsigned round;                 /* 1.. (--rounds) */
	double seconds;                 /* start to stop */
	double client_cpu;              /* vaai-lab's CPU seconds in the phase */
	double target_cpu;              /* targetd's, -1 unknown (needs --control) */
	uint64_t vm_ios, vm_bytes;      /* completed before the stop */
	struct lab_hist vm_lat;         /* first try to GOOD, retries included */
	uint64_t vm_conflicts, vm_retries_ua;
	uint64_t updates;               /* metadata updates done */
	struct lab_hist upd_lat;        /* one whole update, lock included */
	uint64_t host_conflicts, miscompares, lock_busy;
	uint64_t lost_updates;          /* metadata counter behind the updates */
	struct lab_counters c0, c1;     /* targetd's counters before and after */
	unsigned nsec;
	struct lock_sample *series;
};

static inline uint64_t lock_phase_conflicts(const struct lock_phase *p)
{
	return p->vm_conflicts + p->host_conflicts;
}

void lock_report(const struct lab_opts *o, const struct lock_phase *ph, unsigned n,
		 const char *workload);

#endif
