/* ktune — symbol visibility of the public API.
 *
 * libktune is built with hidden visibility: only declarations marked KTUNE_API (the C functions
 * of ktune.h and the C++ classes and functions of the public headers) are exported from the
 * shared library. Valid in C and C++. */
#ifndef KTUNE_EXPORT_H
#define KTUNE_EXPORT_H

#if defined(_WIN32)
#define KTUNE_API
#elif defined(__cplusplus) && (defined(__GNUC__) || defined(__clang__))
/* The standard attribute form, so it can follow other attributes: class [[nodiscard]] KTUNE_API. */
#define KTUNE_API [[gnu::visibility("default")]]
#elif defined(__GNUC__) || defined(__clang__)
#define KTUNE_API __attribute__((visibility("default")))
#else
#define KTUNE_API
#endif

#endif /* KTUNE_EXPORT_H */
