#include "core/utf8.h"

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
