/* Numbers in strict decimal notation, for text a user gives: options, environment variables,
 * lists of numbers. strtol / strtod alone also take leading blanks (" 5"), strtol's base 0 and
 * strtod hex forms ("0x10"), and strtod "inf" / "nan"; a trailing blank ("5 ") they leave in
 * `end`. So " 5" passed where "5 " was refused: these helpers refuse both the same way, and
 * each caller words its own error (naming the option or variable and the value). Users: the
 * command's numeric options (cli/args.c), --debug-inject-* lists, --loss-scale, and the checked
 * TEZGAH_* integers (ranks, TEZGAH_CUDA_DEVICE, TEZGAH_LOSS_SCALE_GROWTH, TEZGAH_CPU_MISALIGN,
 * TEZGAH_MM_MC). Not the kernel tuning and A/B switches (TEZGAH_WEBGPU_*, TEZGAH_CUDA_* kernel
 * settings, TEZGAH_DECODE_CHUNK, ...): measurement knobs read with atoi / strcmp, where an
 * unreadable value counts as 0 or "set"; they are for whoever measures a kernel, and checking
 * each would add an error path to every op that reads one. `logits --ids` keeps strtol's
 * leading blanks on purpose: it takes `tezgah encode`'s "[1, 2]" as given (but not its '+'). */
#ifndef TZ_CORE_DECIMAL_H
#define TZ_CORE_DECIMAL_H
#include <stddef.h>

/* 1 when s[0..n) is decimal notation: an optional '-', digits, and with frac also an optional
 * fraction ('.' digits; digits on at least one side) and exponent ([eE], optional sign,
 * digits): "-12", "3e-4", "3e+4", ".5", "2."; else 0 (blanks anywhere, a leading '+' ("+5"),
 * "", "0x10", "inf", "1,5"). */
int tz_decimal(const char *s, size_t n, int frac);
/* s[0..n) as a base-10 integer ("010" is 10): 0 and *out when tz_decimal(s, n, 0) and it fits
 * a long, else -1 (no error message is set). Any length: leading zeros are digits like any
 * other ("0000000000000000000000000000000000000005" is 5). */
int tz_decimal_long(const char *s, size_t n, long *out);
/* A float32 as the shortest "%.Ng" (N = 1..9) that strtof reads back as the same float:
 * "0.003" for 0.003f, whose double prints as 0.0030000000260770321 (`tezgah info` showed
 * the training options so; the shortest-round-trip rule of printf's %g successors); "1e-08",
 * "0.95", "-0", "inf", "nan"; whole numbers below 1e6 in full, as %g writes them ("10000",
 * not "1e+04"). Nine significant digits always round-trip a float (FLT_DECIMAL_DIG),
 * so N = 9 ends the search. buf: at least TZ_F32_STR bytes; returns buf. */
#define TZ_F32_STR 32
char *tz_f32_str(float v, char *buf);

#endif
