#include "core/utf8.h"

#include <stdio.h>
#include <string.h>

size_t tz_utf8_seq_len(const unsigned char *s, size_t n) {
  unsigned c = s[0];
  size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
  if (!len || len > n || (len == 2 && c < 0xC2) || (len == 4 && c > 0xF4)) return 0;
  for (size_t k = 1; k < len; k++)
    if ((s[k] & 0xC0) != 0x80) return 0;
  if (len == 3 && ((c == 0xE0 && s[1] < 0xA0) || (c == 0xED && s[1] >= 0xA0))) return 0;
  if (len == 4 && ((c == 0xF0 && s[1] < 0x90) || (c == 0xF4 && s[1] >= 0x90))) return 0;
  return len;
}

long tz_utf8_invalid_at(const unsigned char *s, size_t n) {
  for (size_t i = 0; i < n;) {
    size_t len = tz_utf8_seq_len(s + i, n - i);
    if (!len) return (long)i;
    i += len;
  }
  return -1;
}

size_t tz_utf8_count_invalid(const unsigned char *s, size_t n) {
  size_t bad = 0;
  for (size_t i = 0; i < n;) {
    size_t len = tz_utf8_seq_len(s + i, n - i);
    if (!len) {
      bad++;
      i++;
    } else {
      i += len;
    }
  }
  return bad;
}

/* Text: whole UTF-8 sequences up to the end (or up to a multi-byte sequence that the end of
 * the read cut off), and of the C0 controls only the ones text files hold. */
static int looks_text(const unsigned char *b, size_t n, int more) {
  if (!n) return 0;
  for (size_t i = 0; i < n;) {
    size_t len = tz_utf8_seq_len(b + i, n - i);
    if (!len) return more && n - i < 4 && b[i] >= 0xC2 && b[i] <= 0xF4; /* cut off, or invalid */
    unsigned c = b[i];
    if (len == 1 && ((c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f') || c == 0x7f)) return 0;
    i += len;
  }
  return 1;
}

int tz_utf8_describe_head(const unsigned char *b, size_t n, int more, char *out, size_t cap) {
  size_t o = 0;
  if (!looks_text(b, n, more)) {
    o = (size_t)snprintf(out, cap, "bytes");
    for (size_t i = 0; i < n && i < 8 && o < cap; i++) o += (size_t)snprintf(out + o, cap - o, " %02x", b[i]);
    return 0;
  }
  out[o++] = '"';
  size_t i = 0;
  while (i < n && o + 8 < cap) {
    size_t len = tz_utf8_seq_len(b + i, n - i);
    if (!len || i + len > TZ_HEAD_SHOWN) break;
    const char *esc = b[i] == '\n' ? "\\n" : b[i] == '\t' ? "\\t" : b[i] == '\r' ? "\\r" : b[i] == '\f' ? "\\f"
                      : b[i] == '"' ? "\\\"" : b[i] == '\\' ? "\\\\" : NULL;
    if (esc) {
      memcpy(out + o, esc, 2);
      o += 2;
    } else {
      memcpy(out + o, b + i, len);
      o += len;
    }
    i += len;
  }
  snprintf(out + o, cap - o, "%s\"", i < n || more ? "..." : "");
  return 1;
}
