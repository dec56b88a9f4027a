/* tz_train's data phase (train_run.h): the corpus prepared into cached shards or the shards
 * given, the run's record of them (data_prep: corpus, options, XXH64 of the corpus and shards)
 * and what --resume does when they are gone, the tokenizer, the model's vocabulary from them,
 * and the loaders; a shard id beyond the vocabulary is said as a mismatch of the two. */
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "core/progress.h" /* tz_plural */
#include "core/fileio.h"
#include "data/shard.h"
#include "model/config_json.h"
#include "train/train_run.h"

/* The run's data cache: .cache beside the run directory, absolute (a resumed run finds its
 * shards from any working directory). Malloc'ed. */
static char *cache_root_of(const char *run_dir) {
  char *abs = realpath(run_dir, NULL);
  char *root = tz_path_join(dirname(abs), ".cache");
  free(abs);
  return root;
}

/* A comma-separated path list with its relative entries made absolute (from the working
 * directory): the corpus list a run records, valid from wherever it is resumed. The entries are
 * tz_split_paths's, as tz_expand_paths reads them: the spaces around an entry dropped ("a.txt,
 * b.txt" is two files; kept, the second became "/cwd/ b.txt", a file that is not there), and an
 * existing name with a comma in it one entry (split, it became "/cwd/a,/cwd/b.txt"). Malloc'ed. */
static char *abs_list(const char *list) {
  char cwd[PATH_MAX];
  if (!getcwd(cwd, sizeof cwd)) cwd[0] = 0;
  char **items;
  size_t n, cap = 1, k = 0;
  tz_split_paths(list, &items, &n);
  for (size_t i = 0; i < n; i++) cap += strlen(cwd) + strlen(items[i]) + 2;
  char *out = tz_malloc(cap);
  out[0] = 0;
  for (size_t i = 0; i < n; i++)
    k += (size_t)snprintf(out + k, cap - k, "%s%s%s%s", i ? "," : "", items[i][0] != '/' && cwd[0] ? cwd : "",
                          items[i][0] != '/' && cwd[0] ? "/" : "", items[i]);
  tz_paths_free(items, n);
  return out;
}

/* The first path of a shard list that is not there (a plain path missing, or a pattern that
 * matches nothing), malloc'ed; NULL when all are. */
static char *first_missing(const char *list) {
  char **paths;
  size_t n;
  if (tz_expand_paths(list, &paths, &n)) return tz_strdup(list);
  char *gone = NULL;
  for (size_t i = 0; i < n && !gone; i++)
    if (!tz_exists(paths[i])) gone = tz_strdup(paths[i]);
  tz_paths_free(paths, n);
  return gone;
}

/* Whether the shard file `path` is the one the run recorded (its XXH64 and size): 0, or -1 with
 * "<path>: <what>: xxh64 X, N bytes, not the run's (xxh64 Y, M bytes) ...". */
static int check_recorded(const char *path, const char *what, uint64_t want, uint64_t want_bytes, const char *why) {
  uint64_t h, bytes;
  if (tz_prep_file_xxh64(path, &h, &bytes)) return -1;
  if (h == want && bytes == want_bytes) return 0;
  return tz_err("%s: %s: xxh64 %016" PRIx64 ", %" PRIu64 " bytes, not the run's (xxh64 %016" PRIx64 ", %" PRIu64
                " bytes)%s", path, what, h, bytes, want, want_bytes, why);
}

/* A --data run's record of its corpus and shards ("data_prep" in the training state), made
 * when the shards are prepared (rank 0: it saves the checkpoints). */
static int record_prep(train_run *r) {
  tz_train_state *st = &r->st;
  free(st->prep.corpus);
  st->prep.corpus = abs_list(r->o.data);
  st->prep.vocab_size = r->o.vocab_size;
  st->prep.val_fraction = r->o.val_fraction;
  st->prep.run_tok = r->o.init_from != NULL;
  st->prep.corpus_xxh64 = r->prep.corpus_xxh64;
  if (tz_prep_file_xxh64(r->prep.train_path, &st->prep.train_xxh64, &st->prep.train_bytes) ||
      tz_prep_file_xxh64(r->prep.val_path, &st->prep.val_xxh64, &st->prep.val_bytes))
    return -1;
  st->prep.has = 1;
  return 0;
}

/* The run's shard lists become `train` and `val` (malloc'ed, taken over; NULL keeps that list),
 * and the three places that hold them follow at once: the state (what the checkpoint records),
 * the options and the data phase's own pointers (none is left pointing to a freed string). */
static void set_shards(train_run *r, char *train, char *val, const char **train_shards, const char **val_shards) {
  tz_train_state *st = &r->st;
  if (train) free(st->train_shards), st->train_shards = train;
  if (val) free(st->val_shards), st->val_shards = val;
  *train_shards = r->o.train_shards = st->train_shards;
  *val_shards = r->o.val_shards = st->val_shards;
}

/* --resume of a run whose token shards are gone (`gone`, the first missing; the cache under
 * .cache deleted, or the run directory moved): the same cache entry beside the run directory
 * (moved with it) is taken when its shards are the recorded ones; else, when the run recorded
 * its corpus (data_prep) and the corpus is there with the same text, the shards are prepared again as the
 * run did (data preparation is deterministic: the same BPE, the same split), into the cache
 * beside the run directory, and checked byte for byte against the record (XXH64 and size) before
 * the run goes on with them; the run then records their paths. Otherwise one line names the
 * missing shard and the way out: the corpus put back, or copies of the shards given with
 * --train-shards / --val-shards on --resume (checked against the record the same way). */
static int prepare_again(train_run *r, const char *gone, const char **train_shards, const char **val_shards) {
  tz_train_opts *o = &r->o;
  tz_train_state *st = &r->st;
  const char *out = " give copies of the run's shards with --train-shards and --val-shards on --resume";
  if (!st->prep.has)
    return tz_err("%s: the run's token shard is gone, and the run does not record the "
                  "corpus it was prepared from (a --train-shards run, or a checkpoint from before 2026-12-05): put "
                  "the shards back, or%s", gone, out);
  /* the run directory moved with its .cache (runs/ copied elsewhere): the entry of the same
   * key beside it, when its shards are the recorded ones (no corpus needed) */
  char *root = cache_root_of(o->run_dir), *key = tz_strdup(st->train_shards), *slash = strrchr(key, '/');
  if (slash) *slash = 0;
  slash = strrchr(key, '/');
  char *dir = tz_path_join(root, slash ? slash + 1 : key), *tp = tz_path_join(dir, "train.bin"),
       *vp = tz_path_join(dir, "val.bin");
  int moved = strcmp(tp, st->train_shards) &&
              !check_recorded(tp, "", st->prep.train_xxh64, st->prep.train_bytes, "") &&
              !check_recorded(vp, "", st->prep.val_xxh64, st->prep.val_bytes, "");
  tz_err_clear();
  free(root);
  free(key);
  free(dir);
  if (moved) {
    tz_train_note(r, "note: %s: the run's token shard is gone; the data cache beside the run directory holds the "
                     "run's shards, byte for byte: %s\n", gone, tp);
    set_shards(r, tp, vp, train_shards, val_shards);
    return 0;
  }
  free(tp);
  free(vp);
  uint64_t h;
  if (tz_prep_corpus_xxh64(st->prep.corpus, &h)) {
    char why[TZ_ERR_MAX];
    snprintf(why, sizeof why, "%s", tz_errmsg());
    return tz_err("%s: the run's token shard is gone (its data cache deleted?), and its corpus cannot be read to "
                  "prepare it again (%s): put the corpus back, or%s", gone, why, out);
  }
  if (h != st->prep.corpus_xxh64)
    return tz_err("%s: the run's token shard is gone (its data cache deleted?), and its corpus %s has changed since "
                  "the run prepared it (xxh64 %016" PRIx64 ", the run's %016" PRIx64 "), so the same shards cannot be "
                  "made from it: put the run's corpus back, or%s", gone, st->prep.corpus, h, st->prep.corpus_xxh64, out);
  /* said now, not held (tz_train_note): it is why the data preparation's lines follow */
  if (!o->quiet)
    fprintf(stderr, "note: %s: the run's token shard is gone; preparing the shards again from the run's corpus %s "
                    "(unchanged: xxh64 %016" PRIx64 ")\n", gone, st->prep.corpus, h);
  free(r->cache_root);
  r->cache_root = cache_root_of(o->run_dir);
  r->preparing = 1;
  /* the recorded options; the tokenizer backend of this session's --tokenizer-backend, the CPU
   * unless given (the BPE and the ids are the same on either: the shards are checked against the
   * record below all the same; the run does not record it); no batch check (B*T+1: the run's
   * shards held it) */
  if (tz_prepare_corpus_tok(st->prep.corpus, st->prep.run_tok ? r->tok : NULL, st->prep.vocab_size,
                            st->prep.val_fraction, 0, 0, r->cache_root, o->quiet, o->tokenizer_backend, &r->prep))
    return -1;
  const char *why = ": preparing the corpus again did not give the run's shards; an exact resume needs them:";
  char w[256];
  snprintf(w, sizeof w, "%s%s", why, out);
  if (check_recorded(r->prep.train_path, "the training shard prepared again", st->prep.train_xxh64,
                     st->prep.train_bytes, w) ||
      check_recorded(r->prep.val_path, "the validation shard prepared again", st->prep.val_xxh64, st->prep.val_bytes,
                     w))
    return -1;
  if (!o->quiet)
    fprintf(stderr, "data: the shards prepared again are the run's, byte for byte (xxh64 %016" PRIx64 ", %016" PRIx64
                    "): %s\n", st->prep.train_xxh64, st->prep.val_xxh64, r->prep.train_path);
  set_shards(r, tz_strdup(r->prep.train_path), tz_strdup(r->prep.val_path), train_shards, val_shards);
  return 0;
}

/* A shard list given on --resume of a run that records its shards (one file each), *stp (the
 * run's state's copy, absolute): the one file it names (a path, or a pattern or list that
 * matches exactly one), checked against the record (check_recorded); *stp then becomes that
 * file's path, so that the run records the file and not the pattern. 0, or -1 naming the
 * option. */
static int check_given(char **stp, const char *flag, uint64_t want, uint64_t want_bytes, const char *why) {
  char **paths;
  size_t n;
  if (tz_expand_paths(*stp, &paths, &n)) return tz_err_prefix(flag);
  int rc = 0;
  if (n != 1) {
    rc = tz_err("%s: '%s' names %zu files; the run recorded one shard here: give the copy of that one", flag, *stp, n);
  } else {
    rc = check_recorded(paths[0], flag, want, want_bytes, why);
    if (!rc) {
      free(*stp);
      *stp = tz_strdup(paths[0]);
    }
  }
  tz_paths_free(paths, n);
  return rc;
}

/* A recorded shard that is there, on --resume: the run's (check_recorded), or -1 with the way out.
 * In the run's data cache (an entry .cache/<key>/ beside the run directory) the way out names
 * the entry: deleted, the next --resume prepares it again from the corpus (prepare_again),
 * which a changed entry in place would not (the cache is taken as it is). Elsewhere (copies
 * given on an earlier --resume) it is the user's file: copies of the run's shards, again. */
static int check_kept(const train_run *r, const char *path, const char *what, uint64_t want, uint64_t want_bytes) {
  char *root = cache_root_of(r->o.run_dir), *entry = tz_strdup(path), *slash = strrchr(entry, '/'), why[TZ_ERR_MAX];
  if (slash) *slash = 0;
  size_t n = strlen(root);
  if (!strncmp(entry, root, n) && entry[n] == '/' && !strchr(entry + n + 1, '/'))
    snprintf(why, sizeof why, " (the data cache changed since the run prepared it); an exact resume needs the "
             "run's own shards: delete %s and resume to prepare them again from the corpus (when it and the "
             "preparation are unchanged), or give copies of them with --train-shards and --val-shards on --resume",
             entry);
  else
    snprintf(why, sizeof why, " (changed since it was given); an exact resume needs the run's own shards: give "
             "copies of them with --train-shards and --val-shards on --resume");
  free(root);
  free(entry);
  return check_recorded(path, what, want, want_bytes, why);
}

/* --resume: the run's shards. Given with --train-shards / --val-shards (copies of the run's,
 * say), they are checked against the run's record when it has one (a prepared corpus: one file
 * each, XXH64 and size), else taken with a note; recorded ones that are gone are prepared again
 * (prepare_again). */
static int resume_shards(train_run *r, const char **train_shards, const char **val_shards) {
  tz_train_state *st = &r->st;
  if (r->resume_given_shards) {
    /* recorded for the next resume: absolute, as the prepared ones (from any working directory) */
    set_shards(r, r->resume_given_shards & 1 ? abs_list(st->train_shards) : NULL,
               r->resume_given_shards & 2 && st->val_shards ? abs_list(st->val_shards) : NULL, train_shards,
               val_shards);
    const char *why = "; an exact resume needs the run's own shards (or leave --train-shards / --val-shards out)";
    /* the given lists must match files (a pattern that matches nothing, a missing path: said
     * as the option's, not as the run's shard gone) */
    for (int k = 0; k < 2; k++) {
      const char *list = k ? *val_shards : *train_shards;
      if (!(r->resume_given_shards & (1 << k)) || !list) continue;
      char *miss = first_missing(list);
      if (miss) {
        tz_err("%s: %s: no such file (or no match)", k ? "--val-shards" : "--train-shards", miss);
        free(miss);
        return -1;
      }
    }
    if (!st->prep.has) {
      if (r->rank == 0)
        tz_train_note(r, "note: --train-shards / --val-shards on --resume: the run records no checksum of its "
                         "shards (a --train-shards run, or a checkpoint from before 2026-12-05); taken as the run's "
                         "(an exact resume needs the same tokens)\n");
    } else {
      /* (the pointers follow check_given's new strings before a failure returns: set_shards) */
      int bad = (r->resume_given_shards & 1 &&
                 check_given(&st->train_shards, "--train-shards", st->prep.train_xxh64, st->prep.train_bytes, why)) ||
                (r->resume_given_shards & 2 && st->val_shards &&
                 check_given(&st->val_shards, "--val-shards", st->prep.val_xxh64, st->prep.val_bytes, why));
      set_shards(r, NULL, NULL, train_shards, val_shards);
      if (bad) return -1;
    }
  }
  char *gone = first_missing(*train_shards);
  if (!gone && *val_shards) gone = first_missing(*val_shards);
  if (!gone) {
    /* The recorded shards that are there are checked against the record too (those given
     * were, above): a preparation again that did not give the run's shards is refused, but
     * it leaves them at the recorded place when the cache key is the same, and the next
     * --resume took them without a word; so does a cache entry rewritten since. One pass
     * over files the loader then reads whole. */
    if (!st->prep.has) return 0;
    if ((!(r->resume_given_shards & 1) &&
         check_kept(r, *train_shards, "the run's training shard", st->prep.train_xxh64, st->prep.train_bytes)) ||
        (!(r->resume_given_shards & 2) && *val_shards &&
         check_kept(r, *val_shards, "the run's validation shard", st->prep.val_xxh64, st->prep.val_bytes)))
      return -1;
    return 0;
  }
  int rc = prepare_again(r, gone, train_shards, val_shards);
  free(gone);
  return rc;
}

/* A file that `list` (option `flag`) reads more than once is read so many times (a deliberate
 * up-weighting, perhaps): kept, with a note (tz_list_repeats) for each, held with the others. */
static void note_repeats(train_run *r, const char *flag, const char *list) {
  if (r->o.quiet) return; /* the notes would not be printed: no stat calls for them */
  char *notes = tz_list_repeats("", flag, list);
  if (notes) tz_train_note(r, "%s", notes);
  free(notes);
}

/* Validation on files that training reads (--val-shards s.bin beside --train-shards s.bin, a
 * shard in both lists, another spelling of it or a link to it: one file in tz_same_file's
 * sense) measures how well the model fits its training data, not how it does on held-out
 * text: kept (a smoke test may mean it), with one note naming the first such file and how many
 * more there are. Before, such a run validated on its training data without a word (the
 * session-34 walkthrough). val_flag / train_flag: the options as the user knows them ("the
 * run's --val-shards" on --resume). Lists that do not expand are their loaders' errors. */
static void note_val_in_train(train_run *r, const char *val_flag, const char *val_list, const char *train_flag,
                              const char *train_list) {
  if (r->o.quiet || !val_list || !train_list) return;
  char **vp = NULL, **tp = NULL;
  size_t vn = 0, tn = 0;
  if (tz_expand_paths(val_list, &vp, &vn) || tz_expand_paths(train_list, &tp, &tn)) {
    tz_err_clear();
    tz_paths_free(vp, vn);
    return;
  }
  size_t both = 0, first = 0;
  for (size_t i = 0; i < vn; i++) { /* (a missing file is no match: its loader says so) */
    size_t j = 0;
    while (j < tn && !tz_same_file(vp[i], tp[j])) j++;
    if (j < tn && !both++) first = i;
  }
  if (both == 1)
    tz_train_note(r, "note: %s: %s is also in %s: validation reads training data, so the val loss is not measured "
                     "on held-out tokens\n", val_flag, vp[first], train_flag);
  else if (both > 1)
    tz_train_note(r, "note: %s: %s and %zu more of its files are also in %s: validation reads training data, so the "
                     "val loss is not measured on held-out tokens\n", val_flag, vp[first], both - 1, train_flag);
  tz_paths_free(vp, vn);
  tz_paths_free(tp, tn);
}

/* This rank's turn of phase_data: a --data corpus prepared into cached shards (a BPE trained
 * on it unless a tokenizer is given), or the token shards given (--resume: the run's,
 * resume_shards); the tokenizer loaded. */
static int data_turn(train_run *r, const char **train_shards, const char **val_shards) {
  tz_train_opts *o = &r->o;
  tz_train_state *st = &r->st;
  if (!*train_shards) {
    note_repeats(r, "--data", o->data);
    r->cache_root = cache_root_of(o->run_dir);
    r->preparing = 1;
    if (tz_prepare_corpus_tok(o->data, o->init_from ? r->tok : NULL, o->vocab_size, o->val_fraction, o->B, o->T,
                              r->cache_root, o->quiet, o->tokenizer_backend, &r->prep))
      return -1;
    *train_shards = r->prep.train_path;
    *val_shards = r->prep.val_path;
    st->train_shards = tz_strdup(*train_shards);
    st->val_shards = tz_strdup(*val_shards);
    if (r->rank == 0 && record_prep(r)) return -1;
    if (!r->tok && tz_tok_load(r->prep.tokenizer_path, &r->tok)) return -1;
  } else {
    if (o->resume && resume_shards(r, train_shards, val_shards)) return -1;
    /* recorded absolute, as the prepared ones: a resume finds them from any working directory */
    if (!st->train_shards) st->train_shards = abs_list(*train_shards);
    if (!st->val_shards && *val_shards) st->val_shards = abs_list(*val_shards);
    if (!r->tok && o->tokenizer && tz_tok_load_spec(o->tokenizer, &r->tok)) return -1;
  }
  return 0;
}

/* A prepared --data corpus whose split cannot hold one batch (B*T+1 tokens): the BPE packed the
 * text into fewer tokens than the bytes-based check before it (data_prep.c's check_batch_fits,
 * one token per byte at most) could rule out. Said with the counts and what helps (the loader's
 * own message would name the cache file and no remedy): -B or -T lower (B*T+1 at most the
 * split's tokens), the smallest --val-fraction (in steps of 0.01) whose split holds a batch on
 * both sides, where one does (the tokens are the same: the BPE is
 * trained on all the text, whatever the split), or more text.
 * "corpus.txt: the validation split holds 854 tokens (--val-fraction 0.05 of 17093), fewer than
 * one batch (B*T+1 = 8*128+1 = 1025 tokens): lower -B or -T (B*T at most 853), take
 * --val-fraction 0.06 (its split holds one) or give more text". */
static int check_prepared_fits(const train_run *r) {
  const tz_train_opts *o = &r->o;
  size_t need = (size_t)o->B * (size_t)o->T + 1, n = r->prep.n_train + r->prep.n_val;
  int val = r->prep.n_train >= need; /* the short split (the validation one: the training split is the larger) */
  size_t have = val ? r->prep.n_val : r->prep.n_train;
  if (have >= need) return 0;
  char vf[80] = "";
  float f = tz_prep_val_fraction_for(n, need); /* the same tokens split otherwise (the BPE sees all the text) */
  /* "take", not "raise": on the block split the counts do not grow with the share (0.2 of
   * 28547 tokens holds 4096, 0.15 holds 4282: every 5th block vs the tail) */
  if (f > 0) snprintf(vf, sizeof vf, ", take --val-fraction %g (its split holds one)", f);
  return tz_err("%s: the %s split holds %zu token%s (--val-fraction %g of %zu), fewer than one batch (B*T+1 = %d*%d+1 "
                "= %zu tokens): lower -B or -T (B*T at most %zu)%s or give more text",
                o->data, val ? "validation" : "training", have, tz_plural((long long)have), o->val_fraction, n, o->B, o->T,
                need, have ? have - 1 : 0, vf);
}

/* Shards holding a token id at or above the model's vocabulary (tz_loader_open's
 * TZ_SHARD_EVOCAB): said as a mismatch of the shards and the vocabulary, with what set that
 * vocabulary and the way out, instead of blaming the shard alone. vocab_given: --vocab-size was
 * given (else its default set V). E.g. GPT-2 shards on the default vocabulary:
 * "g2.bin: token id 50256 (at position 0; this shard's largest is 50256) is outside the model's vocabulary
 * of 2048 tokens (--vocab-size 2048, the default): the shards were made with a larger tokenizer;
 * give it with --tokenizer (gpt2 for GPT-2's ids; it sets the vocabulary, and the closing sample
 * decodes with it) or --vocab-size 50257 or more". The model of --resume / --init-from, or
 * --tokenizer, is named instead where it set V. */
static int vocab_mismatch(const train_run *r, int vocab_given) {
  const tz_train_opts *o = &r->o;
  const tz_shard_bad_id *b = tz_shard_last_bad_id();
  char what[1280];
  tz_shard_bad_id_text(what, sizeof what);
  /* GPT-2's shards (llm.c's, tezgah tokenize's) hold its <|endoftext|>, 50256, their largest id */
  const char *g2 = b->max_id == 50256 ? " (gpt2 for GPT-2's ids)" : "";
  if (o->resume)
    return tz_err("%s is outside the vocabulary of the model %s (V=%d): the shards were made with another tokenizer "
                  "than the run's; give the run's own shards (--train-shards / --val-shards on --resume), or train a "
                  "new run on these with their --tokenizer", what, r->rf.path ? r->rf.path : o->resume, b->vocab_size);
  if (o->init_from && r->tok)
    return tz_err("%s is outside the vocabulary of the model %s (V=%d): the shards were made with another tokenizer "
                  "than the model's; tokenize the text with the model's (tezgah tokenize --tokenizer %s), or train a "
                  "new model on these shards with their --tokenizer", what, r->rf.path ? r->rf.path : o->init_from,
                  b->vocab_size, o->init_from);
  if (o->init_from) /* a model without a tokenizer (a Hugging Face directory, an llm.c file) */
    return tz_err("%s is outside the vocabulary of the model %s (V=%d): the shards were made with another tokenizer "
                  "than the model's; tokenize the text with the model's own tokenizer (tezgah tokenize --tokenizer "
                  "SPEC), or train a new model on these shards with their --tokenizer", what,
                  r->rf.path ? r->rf.path : o->init_from, b->vocab_size);
  if (r->tok)
    return tz_err("%s is outside the vocabulary of --tokenizer %s (%d tokens), which sets the model's: the shards "
                  "were made with another tokenizer; give that one with --tokenizer%s", what,
                  o->tokenizer ? o->tokenizer : "(the corpus's)",
                  tz_tok_vocab_size(r->tok), g2);
  return tz_err("%s is outside the model's vocabulary of %d tokens (--vocab-size %d%s): the shards were made with a "
                "larger tokenizer; give it with --tokenizer (%sit sets the vocabulary, and the closing sample decodes "
                "with it) or --vocab-size %d or more", what, b->vocab_size, b->vocab_size,
                vocab_given ? "" : ", the default", *g2 ? "gpt2 for GPT-2's ids; " : "", b->max_id + 1);
}

/* Data and tokenizer, then the model's config from them, and the loaders: rank 0 prepares
 * the data (BPE training, tokenizing into the cache) while the other ranks wait; they then
 * find it cached. */
int tz_train_phase_data(train_run *r) {
  tz_train_opts *o = &r->o;
  const char *train_shards = o->train_shards, *val_shards = o->val_shards;
  for (int turn = 0; turn < (r->W > 1 ? 2 : 1); turn++) {
    if (turn == 1 && tz_train_agree(r, 1)) return -1;
    if ((turn == 0) != (r->rank == 0)) continue;
    if (data_turn(r, &train_shards, &val_shards)) return -1;
  }
  int vocab_given = o->model.vocab_size > 0; /* cmd_train sets it for shard runs with --vocab-size */
  if (!o->resume && !o->init_from) {
    /* A --tokenizer sets V; a --vocab-size given with it was ignored without a word (V=50257 for
     * --tokenizer gpt2 --vocab-size 257: the fresh-clone walkthrough, 2026-12-05). One below the
     * tokenizer's size would leave its ids outside the model: refused. One above pads the model
     * past its tokenizer (GPT-2's 50257 -> 50304, a multiple of 64, as llm.c does; README:
     * sample leaves the padded ids out): taken, with a note. */
    int tok_v = r->tok ? tz_tok_vocab_size(r->tok) : 0;
    const char *tok_name = o->tokenizer ? o->tokenizer : "(the run's)";
    if (r->tok && vocab_given && o->model.vocab_size < tok_v)
      return tz_err("--vocab-size: %d is below the %d tokens of --tokenizer %s, whose ids would lie outside the "
                    "model; leave --vocab-size out (the tokenizer sets it) or give %d or more", o->model.vocab_size,
                    tok_v, tok_name, tok_v);
    if (r->tok && vocab_given && o->model.vocab_size > tok_v)
      tz_train_note(r, "note: --vocab-size %d is above the %d tokens of --tokenizer %s: the model is padded with %d "
                       "rows no token uses (sample leaves them out)\n", o->model.vocab_size, tok_v, tok_name,
                    o->model.vocab_size - tok_v);
    o->model.vocab_size = vocab_given ? o->model.vocab_size : r->tok ? tok_v : o->vocab_size;
    if (o->model.vocab_size <= 0) return tz_err("--vocab-size: needed when training on shards without a tokenizer");
    if (o->model.max_seq_len == 0) o->model.max_seq_len = o->T;
    if (tz_config_finalize(&o->model)) return -1;
  }
  if (o->T > o->model.max_seq_len)
    return tz_err("--seq-len: T=%d is above the model's context max_seq_len=%d", o->T, o->model.max_seq_len);
  if (r->prep.train_path && check_prepared_fits(r)) return -1;
  /* the lists as the user knows them */
  const char *train_flag = o->resume ? "the run's --train-shards" : "--train-shards";
  const char *val_flag = o->resume ? "the run's --val-shards" : "--val-shards";
  if (!r->prep.train_path) { /* shards given (or the run's): the prepared ones are one file each */
    note_repeats(r, train_flag, train_shards);
    note_repeats(r, val_flag, val_shards);
    note_val_in_train(r, val_flag, val_shards, train_flag, train_shards);
  }
  const char *failed = train_flag; /* the list whose loader failed */
  int lrc = tz_loader_open(&r->train, train_shards, o->model.vocab_size, o->B, o->T);
  if (!lrc && val_shards && (lrc = tz_loader_open(&r->val, val_shards, o->model.vocab_size, o->B, o->T))) failed = val_flag;
  if (lrc == TZ_SHARD_EVOCAB) return vocab_mismatch(r, vocab_given);
  if (lrc) {
    /* name the user's corpus, not just the cache file; or which list ("missing.bin: No such
     * file or directory" did not say, the session-36 walkthrough) */
    tz_err_prefix(!o->train_shards && !o->resume ? o->data : failed);
    return -1;
  }
  tz_loader_shuffle(r->train, o->seed);
  return 0;
}

