/* File helpers: whole-file reads and crash-safe writes.
 *
 * Every file tezgah writes goes through tz_afile: data is written to "<path>.tmp.<pid>",
 * flushed, fsync'ed, renamed over <path>, and the directory is fsync'ed. A crash or a full
 * disk at any moment leaves either the old file or the new one, never a half-written one;
 * on error the temporary file is removed. */
#ifndef TZ_CORE_FILEIO_H
#define TZ_CORE_FILEIO_H
#include <stddef.h>
#include <stdio.h>

/* Read a whole file into a malloc'ed buffer (NUL-terminated for convenience; *len excludes
 * the NUL). Errors: "<path>: <strerror>". */
int tz_read_file(const char *path, char **data, size_t *len);

typedef struct {
  FILE *f;
  char *path; /* final name */
  char *tmp;  /* temporary name in the same directory */
  int failed; /* a write failed; commit will refuse */
} tz_afile;

/* Open <path>'s temporary file for writing. Errors name the path and errno's text. */
int tz_afile_open(tz_afile *af, const char *path);
/* Append bytes; on failure (e.g. ENOSPC) records the error and returns -1. */
int tz_afile_write(tz_afile *af, const void *data, size_t n);
/* fflush + fsync + rename + fsync(dir). On any failure removes the temporary file, leaves
 * <path> as it was, and returns -1 with a message naming <path>. */
int tz_afile_commit(tz_afile *af);
/* Discard the temporary file (safe to call after a failed commit or twice). */
void tz_afile_abort(tz_afile *af);

/* Remove temporary files "<name>.tmp.<pid>" in `dir` whose writer process is gone (a
 * SIGKILL, OOM kill or power loss in the middle of a write leaves them behind; without a
 * sweep every crash mid-checkpoint would leak a checkpoint-sized file). Files of a live
 * process (another writer, or this one) are kept. Best effort: returns how many were
 * removed, never fails. */
int tz_afile_sweep(const char *dir);
/* 1 if `name` ends in ".tmp.<pid>" and that process is gone (not this one, not alive): a
 * temporary file or directory nobody will finish or remove. */
int tz_tmp_name_orphaned(const char *name);

/* Write a whole buffer atomically (open + write + commit). */
int tz_write_file_atomic(const char *path, const void *data, size_t n);

/* The entries of a comma-separated list of paths and patterns (not expanded), the spaces
 * around each dropped, empty ones left out: a malloc'ed array of malloc'ed strings (free with
 * tz_paths_free), *n >= 0; returns how many empty entries were left out ("a.txt,", "a,,b",
 * "a, ,b": 1; the command line refuses those, tz_arg_list_add; the readers take what is left). A comma splits the list except inside a name that is
 * there: where an entry alone names nothing, the longest run of entries from it that, joined
 * again with their commas, is an existing path (or a pattern matching one) is one entry
 * ("data/a,b.txt,c.txt" is two files where data/a,b.txt exists and data/a does not). The split
 * wins where both readings name files. */
int tz_split_paths(const char *list, char ***out, size_t *n);
/* 1 when `item` (an entry of tz_split_paths) names a file system entry: a path that exists as
 * given (glob characters or not), or a pattern that matches at least one; else 0. */
int tz_names_something(const char *item);
/* Expand a comma-separated list of paths and glob(3) patterns (tz_split_paths's entries;
 * sorted matches; a plain path is kept as given, missing or not; an entry that exists as
 * given is that one path even with glob characters in its name, "a[1].txt", and only an entry
 * that does not is expanded as a pattern) into a malloc'ed array of
 * malloc'ed strings; free with tz_paths_free. Errors: "<pattern>: no files match" (also for a pattern under a missing
 * directory), "<pattern>: cannot read directory D: <strerror>", "no files given (empty list
 * '...')". */
int tz_expand_paths(const char *list, char ***out, size_t *n);
void tz_paths_free(char **paths, size_t n);

/* A file read more than once by a list (tz_expand_paths of `list`; one file in tz_same_file's
 * sense: "a.txt" and "./a.txt", a link, a glob's match and a name) is kept as given: listing it
 * twice can be a deliberate up-weighting. For each such file one line, "<lead>note: <flag>:
 * <path> is listed N times and is read N times (...)\n" (path: its first listing), all in one
 * malloc'ed string; NULL when no file repeats, or when the list does not expand (its reader
 * says so; no error is left set). */
char *tz_list_repeats(const char *lead, const char *flag, const char *list);
/* 1 when a and b both exist and are one file (st_dev and st_ino, symbolic links followed: a
 * link to the input, or a hard link, is the input), else 0. */
int tz_same_file(const char *a, const char *b);
/* A command's output must not be one of its inputs (tokenize --in x.txt --out x.txt replaced
 * the corpus by its shard): -1 (tz_err) when the existing file `out` (option out_flag) is the
 * file `in` (named in_what: "--in", "the model"), "<out_flag>: '<out>' is the same file as
 * <in_what> '<in>', which this command reads: ...". Where `in` is a directory, also each of
 * dir_files (NULL-terminated names, or NULL) in it: the files the command reads from such a
 * directory (a run's checkpoint.tzc). A missing `out` replaces nothing; in NULL or "-"
 * (stdin): 0. Called before any long work and before the output's temporary file is made. */
int tz_out_not_input(const char *out_flag, const char *out, const char *in_what, const char *in,
                     const char *const *dir_files);
/* An output path checked when the command line is read, before any work (a directory given as
 * the output file was found only when the result was renamed over it, after the work): -1
 * (tz_err) when `out` (option `flag`) is "-" and the output has no stdout form (`what` names
 * it, "a token shard": "--out: '-' (stdout) is not taken for a token shard; give a file name";
 * what NULL: "-" is stdout, 0), or when a file output (is_dir 0) names a directory, an existing
 * one or a path ending in '/' ("--out: 'adir' is a directory; give a file name"). out NULL: 0. */
int tz_out_path(const char *flag, const char *out, const char *what, int is_dir);
/* tz_out_not_input for every file of a list option (tz_expand_paths); a list that does not
 * expand is left to the command's reader (0 here). */
int tz_out_not_in_list(const char *out_flag, const char *out, const char *in_what, const char *list);

/* mkdir -p. Errors name the path. */
int tz_mkdirs(const char *path);
/* tz_mkdirs that also reports what it created: *top (if top is non-NULL) receives a malloc'ed
 * copy of the shallowest directory this call created ("runs6" for "runs6/a" when neither
 * existed), or NULL when every directory existed. tz_rmdirs_upto(path, *top) undoes it. */
int tz_mkdirs_track(const char *path, char **top);
/* Remove path, then its parents up to and including top, each only while it is empty (a
 * directory that holds anything stops the walk). top NULL: nothing is removed. Best effort:
 * no errors. */
void tz_rmdirs_upto(const char *path, const char *top);
/* 1 if path exists (any type). */
int tz_exists(const char *path);
/* Join two path parts with one '/' into a malloc'ed string (trailing slashes of a dropped:
 * "run/" + "x" is "run/x"). */
char *tz_path_join(const char *a, const char *b);

#endif
