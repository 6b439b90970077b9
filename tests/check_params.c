/* placeholder suite: being written */
#include "config.h"
#include "tests/check_suites.h"
Suite *params_suite(void) { return suite_create("params"); }
