/* UTF-8 validation (RFC 3629: no overlongs, no surrogates, nothing above U+10FFFF). */
#ifndef TZ_CORE_UTF8_H
#define TZ_CORE_UTF8_H
#include <stddef.h>
#include <stdio.h>

/* Length of the valid UTF-8 sequence starting at s[0] (1..4), or 0 if it is invalid or
 * truncated by n. */
size_t tz_utf8_seq_len(const unsigned char *s, size_t n);
/* Offset of the first invalid byte, or -1 when all of s is valid UTF-8. */
long tz_utf8_invalid_at(const unsigned char *s, size_t n);
/* Number of bytes that are not part of a valid sequence. */
size_t tz_utf8_count_invalid(const unsigned char *s, size_t n);

/* The first bytes of a file as an error message shows them, to say what the file is not
 * (a text file given as a checkpoint). b[0..n) are the bytes read; more: the file goes on
 * past them. Returns 1 when they look like text: valid UTF-8 (a sequence cut off by the end
 * of b may end it when more is set), no control characters but tab, LF, CR and FF, n > 0;
 * out is then the first TZ_HEAD_SHOWN bytes or fewer (whole characters) quoted, with \n \t
 * \r \" \\ escaped and "..." when more follows: "hello world, thi...". Else 0, and out is the
 * first bytes in hex: "bytes 58 58 58 58 00 01 00 00" (at most 8). cap: at least 96. */
#define TZ_HEAD_SHOWN 16
int tz_utf8_describe_head(const unsigned char *b, size_t n, int more, char *out, size_t cap);

/* Text streamed piece by piece (generated tokens: a byte-level BPE token may end in the middle
 * of a character, which the next token completes) written out as valid UTF-8 only:
 *  - whole characters are written as they complete; an unfinished one is held (at most 3 bytes)
 *    until the bytes that finish it arrive;
 *  - bytes that cannot be part of a character (a stray continuation byte, 0xC0, 0xC1, 0xF5..0xFF,
 *    a sequence broken off by a byte that cannot continue it) are written as U+FFFD, one per
 *    maximal subpart (the Unicode Standard 15.0, section 3.9, "U+FFFD Substitution of Maximal
 *    Subparts"; what WHATWG's TextDecoder and Python's decode(errors="replace") do);
 *  - tz_utf8_stream_end drops a character still unfinished when the text ends (a sample cut by
 *    its token count or by <|endoftext|>): nothing of it was a character yet.
 * Zero-initialise (or tz_utf8_stream_end) before the first write. written: bytes written. */
typedef struct {
  unsigned char held[4];
  int n_held, need; /* bytes held, and the length of the character they begin */
  size_t written;
} tz_utf8_stream;
void tz_utf8_stream_write(tz_utf8_stream *u, const void *bytes, size_t n, FILE *out);
/* The end of the text: the held bytes (an unfinished character) are dropped; returns how many.
 * The stream is then ready for another text (written is kept). */
int tz_utf8_stream_end(tz_utf8_stream *u);

#endif
