#include "kvflash/version.h"

extern "C" const char* kvflash_version(void) { return KVFLASH_VERSION_STRING; }
