/* KVFLASH_API: marks a declaration as part of libkvflash.so's public interface (C and C++).
 *
 * The library is built with -fvisibility=hidden -fvisibility-inlines-hidden, so only declarations
 * carrying KVFLASH_API (or ACL_FUNC_VISIBILITY, the CANN spelling, which is defined as KVFLASH_API)
 * are exported; everything else in the library is internal. Defining KVFLASH_API before including
 * any kvflash header overrides it (to nothing, for instance, when compiling the sources into a
 * program directly). Pure C; usable from C and C++. */
#ifndef KVFLASH_EXPORT_H_
#define KVFLASH_EXPORT_H_

#ifndef KVFLASH_API
#if defined(__GNUC__) || defined(__clang__)
#define KVFLASH_API __attribute__((visibility("default")))
#else
#define KVFLASH_API
#endif
#endif

#endif /* KVFLASH_EXPORT_H_ */
