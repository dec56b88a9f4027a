#include "core/error.h"
#include "tezgah.h"

const char *tz_last_error(void) { return tz_errmsg(); }
