/* placeholder: being written */
#include "config.h"
typedef int placeholder_backstore_backstore_c;
