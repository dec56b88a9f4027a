/* UTF-8 validation (RFC 3629: no overlongs, no surrogates, nothing above U+10FFFF). */
#ifndef TZ_CORE_UTF8_H
#define TZ_CORE_UTF8_H
#include <stddef.h>

/* Length of the valid UTF-8 sequence starting at s[0] (1..4), or 0 if it is invalid or
 * truncated by n. */
size_t tz_utf8_seq_len(const unsigned char *s, size_t n);
/* Offset of the first invalid byte, or -1 when all of s is valid UTF-8. */
long tz_utf8_invalid_at(const unsigned char *s, size_t n);
/* Number of bytes that are not part of a valid sequence. */
size_t tz_utf8_count_invalid(const unsigned char *s, size_t n);

#endif
