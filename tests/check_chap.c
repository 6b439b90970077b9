/* placeholder suite: being written */
#include "config.h"
#include "tests/check_suites.h"
Suite *chap_suite(void) { return suite_create("chap"); }
