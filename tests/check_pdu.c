/* placeholder suite: being written */
#include "config.h"
#include "tests/check_suites.h"
Suite *pdu_suite(void) { return suite_create("pdu"); }
