/* securec.h: the bounds-checked memory, string and formatting functions of CANN's secure C
 * library (Huawei's libboundscheck), which CANN's sample programs include and call (memcpy_s,
 * strcpy_s, ...). kvflash CPU edition: libkvflash.so implements them, and the CANN link name
 * -lc_sec resolves to it. Every function, its error codes and what it leaves in the destination
 * are described in docs/api.md ("securec"). Pure C (C99 and C++11); C linkage.
 *
 * Not provided: the wide-character functions (wmemcpy_s, wcscpy_s, swprintf_s, swscanf_s, ...) and
 * the stream input functions (scanf_s, fscanf_s, vscanf_s, vfscanf_s). */
#ifndef KVFLASH_SECUREC_H_
#define KVFLASH_SECUREC_H_

#include <errno.h>
#include <stdarg.h>

#include "securectype.h"

/* errno_t, unless the C library (C11 Annex K) or the program defines it as a macro. */
#ifndef errno_t
#ifndef SECUREC_DEFINED_ERRNO_TYPE
#define SECUREC_DEFINED_ERRNO_TYPE
typedef int errno_t;
#endif
#endif

/* The return codes. A code with _AND_RESET means the destination was also cleared: the string
 * functions set its first character to '\0', memcpy_s and memmove_s zero all destMax bytes, and
 * memset_s fills all destMax bytes with the value. The plain codes leave the destination alone
 * (it is null, or destMax is outside (0, the limit]). An overlap is always reported with the
 * destination cleared, so there is no plain EOVERLAP. */
#ifndef EOK
#define EOK 0
#endif
#ifndef EINVAL
#define EINVAL 22
#endif
#ifndef ERANGE
#define ERANGE 34
#endif
#ifndef EINVAL_AND_RESET
#define EINVAL_AND_RESET (22 | 128)
#endif
#ifndef ERANGE_AND_RESET
#define ERANGE_AND_RESET (34 | 128)
#endif
#ifndef EOVERLAP_AND_RESET
#define EOVERLAP_AND_RESET (54 | 128)
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Memory. destMax is the size of dest in bytes. Checked in this order: destMax is 0 or above
 * SECUREC_MEM_MAX_LEN (ERANGE); dest is null (EINVAL); src is null (EINVAL_AND_RESET);
 * count > destMax (ERANGE_AND_RESET); for memcpy_s only, the count bytes of src and dest overlap
 * (EOVERLAP_AND_RESET; dest == src is allowed). count == 0 copies nothing. */
SECUREC_API errno_t memcpy_s(void *dest, size_t destMax, const void *src, size_t count);
SECUREC_API errno_t memmove_s(void *dest, size_t destMax, const void *src, size_t count);
/* Sets count bytes of dest to (unsigned char)c. count > destMax sets all destMax bytes and
 * returns ERANGE_AND_RESET. */
SECUREC_API errno_t memset_s(void *dest, size_t destMax, int c, size_t count);

/* Strings. destMax is the size of strDest in characters, including the terminator. Checked in
 * this order: destMax is 0 or above SECUREC_STRING_MAX_LEN (ERANGE); strDest is null (EINVAL);
 * strSrc is null (EINVAL_AND_RESET); then each function's own rules (docs/api.md). Every error
 * after the first two sets strDest[0] to '\0'. No function reads more of strSrc than can fit, so
 * an unterminated source is reported (ERANGE_AND_RESET), never overrun. */
SECUREC_API errno_t strcpy_s(char *strDest, size_t destMax, const char *strSrc);
/* Copies at most count characters of strSrc and terminates. count == 0 stores "". */
SECUREC_API errno_t strncpy_s(char *strDest, size_t destMax, const char *strSrc, size_t count);
/* An unterminated strDest (no '\0' among its destMax characters) is EINVAL_AND_RESET. */
SECUREC_API errno_t strcat_s(char *strDest, size_t destMax, const char *strSrc);
SECUREC_API errno_t strncat_s(char *strDest, size_t destMax, const char *strSrc, size_t count);

/* Formatting, as vsnprintf (the C library's conversions). They return the number of characters
 * written, without the terminator, or -1: for a null strDest or format, destMax 0 or above
 * SECUREC_STRING_MAX_LEN, an output that does not fit (strDest[0] = '\0'), or an encoding error. */
SECUREC_API int sprintf_s(char *strDest, size_t destMax, const char *format, ...)
    SECUREC_ATTRIBUTE(3, 4);
SECUREC_API int vsprintf_s(char *strDest, size_t destMax, const char *format, va_list argList)
    SECUREC_ATTRIBUTE(3, 0);
/* Writes at most count characters. count < destMax and a longer output: strDest holds the first
 * count characters, terminated, and the result is -1. count >= destMax (or (size_t)-1) and an
 * output longer than destMax - 1: strDest[0] = '\0' and -1. count above
 * SECUREC_STRING_MAX_LEN - 1 (other than (size_t)-1) is an error. */
SECUREC_API int snprintf_s(char *strDest, size_t destMax, size_t count, const char *format, ...)
    SECUREC_ATTRIBUTE(4, 5);
SECUREC_API int vsnprintf_s(char *strDest, size_t destMax, size_t count, const char *format,
                            va_list argList) SECUREC_ATTRIBUTE(4, 0);
/* As snprintf_s with count = destMax - 1, but a longer output is truncated and the result is
 * destMax - 1. */
SECUREC_API int snprintf_truncated_s(char *strDest, size_t destMax, const char *format, ...)
    SECUREC_ATTRIBUTE(3, 4);
SECUREC_API int vsnprintf_truncated_s(char *strDest, size_t destMax, const char *format,
                                      va_list argList) SECUREC_ATTRIBUTE(3, 0);

/* Scanning, as sscanf, except that each %c, %s and %[ takes two arguments: the buffer and its size
 * in characters (size_t; an int or unsigned works too: the low 32 bits are used). A field that
 * does not fit (with its terminator, for %s and %[) stores "" and ends the scan. Returns the
 * number of items assigned; -1 for a null buffer or format, an empty buffer, a null destination or
 * a size of 0, the wide forms %lc / %ls / %l[, or end of input before the first assignment. */
SECUREC_API int sscanf_s(const char *buffer, const char *format, ...);
SECUREC_API int vsscanf_s(const char *buffer, const char *format, va_list argList);

/* Tokens, as strtok_r: returns the next token of strToken (or, when it is null, of *context) and
 * stores where to continue in *context; null when no token is left, or for a null strDelimit or
 * context, or a null strToken with a null *context. */
SECUREC_API char *strtok_s(char *strToken, const char *strDelimit, char **context);

/* Reads a line from stdin: at most destMax - 1 characters, the rest of a longer line stays for
 * the next read; trailing '\r' and '\n' are removed. Returns buffer, or null for a null buffer,
 * destMax 0 or above SECUREC_STRING_MAX_LEN, or end of input before any character (buffer[0] is
 * then '\0'). */
SECUREC_API char *gets_s(char *buffer, size_t destMax);

#ifdef __cplusplus
}
#endif

#endif /* KVFLASH_SECUREC_H_ */
