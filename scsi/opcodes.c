/* placeholder: being written */
#include "config.h"
typedef int placeholder_scsi_opcodes_c;
