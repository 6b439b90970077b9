/* placeholder suite: being written */
#include "config.h"
#include "tests/check_suites.h"
Suite *scsi_suite(void) { return suite_create("scsi"); }
