/* placeholder suite: being written */
#include "config.h"
#include "tests/check_suites.h"
Suite *backstore_suite(void) { return suite_create("backstore"); }
