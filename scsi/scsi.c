/* placeholder: being written */
#include "config.h"
typedef int placeholder_scsi_scsi_c;
