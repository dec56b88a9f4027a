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

/* May c be byte k (1..3) of a character that starts with lead? The second byte's range depends on
 * the lead (no overlongs E0 80..9F / F0 80..8F, no surrogates ED A0..BF, nothing above U+10FFFF
 * F4 90..BF); the later bytes are any continuation byte. */
static int continues(unsigned lead, int k, unsigned c) {
  if (k > 1 || lead < 0xE0) return c >= 0x80 && c <= 0xBF;
  unsigned lo = lead == 0xE0 ? 0xA0 : lead == 0xF0 ? 0x90 : 0x80, hi = lead == 0xED ? 0x9F : lead == 0xF4 ? 0x8F : 0xBF;
  return c >= lo && c <= hi;
}

static void put(tz_utf8_stream *u, const void *b, size_t n, FILE *out) {
  fwrite(b, 1, n, out);
  u->written += n;
}

void tz_utf8_stream_write(tz_utf8_stream *u, const void *bytes, size_t n, FILE *out) {
  static const unsigned char fffd[3] = {0xEF, 0xBF, 0xBD};
  const unsigned char *s = bytes;
  size_t run = 0; /* s[i - run .. i): whole ASCII / characters written in one fwrite */
  for (size_t i = 0; i < n; i++) {
    unsigned c = s[i];
    if (u->n_held) {
      if (continues(u->held[0], u->n_held, c)) {
        u->held[u->n_held++] = (unsigned char)c;
        if (u->n_held == u->need) {
          put(u, u->held, (size_t)u->need, out);
          u->n_held = 0;
        }
        continue;
      }
      put(u, fffd, 3, out); /* the broken-off sequence; c starts afresh below */
      u->n_held = 0;
    }
    if (c < 0x80) {
      run++;
      if (i + 1 < n && s[i + 1] < 0x80) continue;
      put(u, s + i + 1 - run, run, out);
      run = 0;
      continue;
    }
    int need = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
    if (!need) {
      put(u, fffd, 3, out);
      continue;
    }
    u->held[0] = (unsigned char)c;
    u->n_held = 1;
    u->need = need;
  }
}

int tz_utf8_stream_end(tz_utf8_stream *u) {
  int dropped = u->n_held;
  u->n_held = 0;
  return dropped;
}
