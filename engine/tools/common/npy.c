/* placeholder */
#include "kestrel/kestrel.h"
int ks__toolcommon_placeholder(void);
int ks__toolcommon_placeholder(void) { return 0; }
