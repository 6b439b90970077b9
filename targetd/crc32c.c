/* placeholder: being written */
#include "config.h"
typedef int placeholder_targetd_crc32c_c;
