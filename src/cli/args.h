/* Command-line helpers shared by the commands: strict numeric parsing with one-line errors
 * ("--steps: 'abc' is not a decimal integer", "--lr: -1 is out of range [0, 10]"; an integer
 * beyond any long, "--steps: 99999999999999999999 is out of range [1, 1073741824]", is one too).
 * Numbers are decimal only (core/decimal.h): an optional '-' and digits, for floats also a
 * fraction and an exponent (1e-3, .5, 2.); integers are base 10 ("010" is 10). Anything else
 * gets one wording naming the option and the value, whatever is wrong with it (" 5", "5 ",
 * "+5", "0x10", "ten"): "--steps: '5 ' is not a decimal integer", "--seed: '0x5' is not a non-negative
 * decimal integer", "--lr: 'nan' is not a decimal number (...)"; besides the ranges, two values
 * get their own words: "--lr: 'inf' is not finite (give a number in [0, 10])" and "--seed: '-1'
 * must not be negative". "--lr: 1e999 is out of range [0, 10]". */
#ifndef TZ_CLI_ARGS_H
#define TZ_CLI_ARGS_H
#include <stdint.h>

int tz_arg_int(const char *flag, const char *s, long min, long max, int *out);
/* tz_arg_int whose out-of-range error ends with " (why)": where the limits are not obvious
 * ("--vocab-size: 70000 is out of range [257, 65536] (... uint16 token shards ...)"). */
int tz_arg_int_why(const char *flag, const char *s, long min, long max, const char *why, int *out);
int tz_arg_u64(const char *flag, const char *s, uint64_t *out);
int tz_arg_float(const char *flag, const char *s, double min, double max, float *out);
/* Report a getopt_long failure ('?' or ':', the latter with missing_arg = 1) for argv[optind-1]
 * / optopt as a one-line error: "--plot: takes no value (got --plot=yes)", "option --steps
 * needs a value", "option --s is ambiguous (--steps, --seed, ...)", "unknown option --x".
 * Long options are named in full (they may be given as any unambiguous prefix). Returns -1. */
struct option;
int tz_arg_bad(const char *cmd, const struct option *longopts, int argc, char **argv, int optind_, int optopt_,
               int missing_arg);
/* A list option (--data, --train-shards, --val-shards) given again: *list becomes the values
 * joined with ',' ("--data a.txt --data b.txt" is "a.txt,b.txt"), which tz_split_paths
 * (core/fileio.h) splits again (where "a" and "b.txt" exist, as those two even where a file
 * "a,b.txt" exists too: the split wins). The first
 * value is kept as given; the joins live until the process ends. Refused naming flag and the
 * value (-1, tz_err; else 0): a value of commas and blanks alone ("names no path"), one with an
 * empty entry ("a.txt," or "a,,b": "has an empty entry"), and one whose split leaves a piece
 * that names nothing ("'b.txt' (from splitting '--data a,b.txt' at ',') not found"; a pattern
 * "matches no file"). A value of one entry that names nothing is left to the reader's
 * "<path>: No such file or directory" (see tz_arg_list_failed_missing). */
int tz_arg_list_add(const char *flag, const char **list, const char *val);
/* 1 when the current error (tz_errmsg) is a reader's "<entry>: ..." for an entry of list (a
 * comma-separated list option's value, e.g. train's and eval's --data) that names nothing: a
 * missing file ("a.txt: No such file or directory") or an empty pattern ("a*.txt: no files
 * match"); else 0 (also for a NULL list). Why: after such a failure the commands name the option
 * (tz_err_prefix: "--data: a.txt: No such file or directory", as --train-shards' reader words
 * it), or, for train's default corpus, say where it is looked for; done after the failure, not
 * at parse time, so that which error comes first stays as it was (a bad model before a missing
 * corpus). */
int tz_arg_list_failed_missing(const char *list);
/* A path value (an option's or a positional's) must name something: '' is refused at parse
 * time as "<what>: empty path" (what: "--run-dir", or the command and the positional's name,
 * "eval: RUN_DIR|CHECKPOINT|HF_DIR"): -1 (tz_err), else 0. Values where '' means something
 * (sample --prompt '', encode '') do not call it. */
int tz_arg_path(const char *what, const char *val);
/* The files a command reads from a model directory (a run, a Hugging Face directory, a
 * tokenizer directory), NULL-terminated: tz_out_not_input's dir_files for a model input. */
extern const char *const TZ_MODEL_DIR_FILES[];
/* Print "tezgah: error: <tz_last_error()>" to stderr; returns 1 (the exit code). */
int tz_cli_fail(void);

#endif
