/* placeholder suite: being written */
#include "config.h"
#include "tests/check_suites.h"
Suite *crc32c_suite(void) { return suite_create("crc32c"); }
