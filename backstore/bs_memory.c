/* placeholder: being written */
#include "config.h"
typedef int placeholder_backstore_bs_memory_c;
