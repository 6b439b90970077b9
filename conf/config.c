/* placeholder: being written */
#include "config.h"
typedef int placeholder_conf_config_c;
