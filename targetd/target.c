/* placeholder: being written */
#include "config.h"
typedef int placeholder_targetd_target_c;
