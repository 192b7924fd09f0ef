/* securectype.h: the types and limits of CANN's secure C library (securec, Huawei's
 * libboundscheck), as securec.h includes them. kvflash CPU edition; see securec.h.
 *
 * Like CANN's, it brings in <stddef.h>, <stdio.h>, <string.h> and <stdlib.h>, so programs that
 * rely on securec.h for memcpy, printf or malloc compile unchanged. Pure C (C99 and C++11). */
#ifndef KVFLASH_SECURECTYPE_H_
#define KVFLASH_SECURECTYPE_H_

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvflash/export.h"

/* The export macro of the securec declarations: the library's own (kvflash/export.h). */
#ifndef SECUREC_API
#define SECUREC_API KVFLASH_API
#endif

/* The largest destMax (and strncpy_s / strncat_s count) the string functions accept, and the
 * largest destMax of memcpy_s, memmove_s and memset_s. These are the values libkvflash.so was
 * built with; defining them differently before including this header does not change them. */
#ifndef SECUREC_STRING_MAX_LEN
#define SECUREC_STRING_MAX_LEN 0x7fffffffUL
#endif
#ifndef SECUREC_MEM_MAX_LEN
#define SECUREC_MEM_MAX_LEN 0x7fffffffUL
#endif

/* printf-style format checking of the formatting functions, off by default as in CANN (its
 * programs pass sizes and counts whose types differ between platforms). */
#ifndef SECUREC_SUPPORT_FORMAT_WARNING
#define SECUREC_SUPPORT_FORMAT_WARNING 0
#endif
#if SECUREC_SUPPORT_FORMAT_WARNING && (defined(__GNUC__) || defined(__clang__))
#define SECUREC_ATTRIBUTE(x, y) __attribute__((format(printf, (x), (y))))
#else
#define SECUREC_ATTRIBUTE(x, y)
#endif

#endif /* KVFLASH_SECURECTYPE_H_ */
