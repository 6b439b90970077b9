/* placeholder: being written */
#include "config.h"
typedef int placeholder_backstore_io_engine_c;
