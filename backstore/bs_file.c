/* placeholder: being written */
#include "config.h"
typedef int placeholder_backstore_bs_file_c;
