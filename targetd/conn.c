/* placeholder: being written */
#include "config.h"
typedef int placeholder_targetd_conn_c;
