/* Model construction, initialization, forward, backward and KV-cache decoding.
 * The math of each op is in docs/OPS.md; this file only wires ops together. */
#include "model/model.h"
#include "dist/comm.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/rng.h"

/* ---- derived sizes ---- */
typedef struct {
  int C, L, nh, nkv, hd, Q, F, F2, V, Vp;
} dims;

static dims dims_of(const tz_config *c) {
  dims d;
  d.C = c->d_model;
  d.L = c->n_layer;
  d.nh = c->n_head;
  d.nkv = c->n_kv_head;
  d.hd = c->d_model / c->n_head;
  d.Q = (d.nh + 2 * d.nkv) * d.hd;
  d.F = c->d_ff;
  d.F2 = c->arch == TZ_ARCH_LLAMA ? 2 * d.F : d.F;
  d.V = c->vocab_size;
  d.Vp = c->padded_vocab;
  return d;
}

static tz_slice P(tz_model *m, size_t off) {
  tz_slice s = {m->params, off * sizeof(float)};
  if (off == TZ_ABSENT) s.buf = NULL;
  return s;
}
static tz_slice G(tz_model *m, size_t off) {
  tz_slice s = {m->grads, off * sizeof(float)};
  if (off == TZ_ABSENT) s.buf = NULL;
  return s;
}

/* ---- activation arena ---- */
/* The activations of one (B, T), carved in a fixed order into slices: "act" tensors in the
 * backend's activation dtype (fp32, or bf16 on CUDA), statistics, losses and token ids in
 * 4-byte elements (backend.h). Every slice is padded to 64 bytes (vector, cp.async and
 * tensor-core loads need >= 16). Three passes of the same carving (lay_out_acts):
 * - size: be and buf NULL: only the bytes (off) and the slice count (n) are computed;
 * - arena (be->act_buffers == 0): slices at increasing offsets of the one buffer `buf`;
 * - per tensor (be->act_buffers == 1): each slice is its own buffer from be->alloc, starting
 *   at offset 0, recorded in a->bufs (so that no op's output shares a buffer with an input). */
typedef struct {
  tz_backend *be; /* per-tensor pass: allocate every slice */
  tz_acts *a;     /* ... and record its buffer in a->bufs */
  tz_buf *buf;    /* arena pass */
  size_t off;
  int n, failed;
  tz_dtype act, act_mm;
} carver;

static tz_slice carve_bytes(carver *cv, size_t bytes, const char *what) {
  size_t padded = (bytes + 63) & ~(size_t)63;
  tz_slice s = {cv->buf, cv->off};
  cv->off += padded;
  cv->n++;
  if (cv->be && !cv->failed) {
    s.off = 0;
    s.buf = cv->be->alloc(cv->be, padded ? padded : 64, what);
    if (s.buf) cv->a->bufs[cv->a->nbufs++] = s.buf;
    else cv->failed = 1;
  }
  return s;
}
/* n fp32 (or int32) elements */
static tz_slice carve(carver *cv, size_t n, const char *what) { return carve_bytes(cv, n * sizeof(float), what); }
/* n act elements */
static tz_slice carve_act(carver *cv, size_t n, const char *what) {
  return carve_bytes(cv, n * tz_dtype_size(cv->act), what);
}

/* n "mmin" elements (be->act_mm: the matmul inputs n1, n2, att, a, nf; backend.h) */
static tz_slice carve_mm(carver *cv, size_t n, const char *what) {
  return carve_bytes(cv, n * tz_dtype_size(cv->act_mm), what);
}

/* Offset an act slice by n elements. */
static tz_slice A(tz_model *m, tz_slice s, size_t n) { return tz_elems(s, n, m->be->act); }

/* Assign every slice of `a` for (B, T) in the pass `cv` says. Returns the bytes. */
static size_t lay_out_acts(tz_acts *a, const tz_config *cfg, carver *cv, int training) {
  dims d = dims_of(cfg);
  size_t N = (size_t)a->B * a->T;
  a->tokens = carve(cv, N, "activations: tokens");
  a->targets = carve(cv, N, "activations: targets");
  a->pos = carve(cv, a->rows > 0 ? (size_t)a->rows : 1, "activations: positions");
  int nres = a->shared ? 2 : d.L + 1;
  for (int i = 0; i < nres; i++) a->res[i] = carve_act(cv, N * d.C, "activations: residual");
  for (int i = nres; i <= d.L; i++) a->res[i] = a->res[i % 2];
  for (int l = 0; l < d.L; l++) {
    tz_layer_acts *x = &a->layer[l];
    if (a->shared && l > 0) {
      *x = a->layer[0];
      continue;
    }
    int keep = !(a->recompute && l > 0); /* recompute: layer 0's n1, n2, a serve every layer */
    x->n1 = keep ? carve_mm(cv, N * d.C, "activations: n1") : a->layer[0].n1;
    x->n1_mean = carve(cv, N, "activations: n1 mean");
    x->n1_rstd = carve(cv, N, "activations: n1 rstd");
    x->qkv = carve_act(cv, N * d.Q, "activations: qkv");
    x->att = carve_mm(cv, N * d.C, "activations: att");
    x->lse = carve(cv, (size_t)a->B * d.nh * a->T, "activations: lse");
    x->mid = carve_act(cv, N * d.C, "activations: mid");
    x->n2 = keep ? carve_mm(cv, N * d.C, "activations: n2") : a->layer[0].n2;
    x->n2_mean = carve(cv, N, "activations: n2 mean");
    x->n2_rstd = carve(cv, N, "activations: n2 rstd");
    x->h = carve_act(cv, N * d.F2, "activations: h");
    x->a = keep ? carve_mm(cv, N * d.F, "activations: a") : a->layer[0].a;
  }
  a->nf = carve_mm(cv, N * d.C, "activations: nf");
  a->nf_mean = carve(cv, N, "activations: nf mean");
  a->nf_rstd = carve(cv, N, "activations: nf rstd");
  a->logits = carve_act(cv, (size_t)(a->shared ? a->rows : a->chunk) * (size_t)d.Vp, "activations: logits");
  a->losses = carve(cv, N, "activations: losses");
  if (training) {
    a->dres = carve_act(cv, N * d.C, "activations: dres");
    a->dtmp = carve_act(cv, N * d.C, "activations: dtmp");
    a->dqkv = carve_act(cv, N * d.Q, "activations: dqkv");
    a->dh = carve_act(cv, N * d.F2, "activations: dh");
    a->da = carve_act(cv, N * d.F, "activations: da");
  }
  return cv->off;
}

static void acts_free(tz_model *m, tz_acts *a);

/* An empty arena for (B, T): the fields lay_out_acts reads, and its per-layer tables. */
static void acts_setup(const tz_model *m, tz_acts *a, int B, int T, int shared, int recompute, int rows, int chunk) {
  memset(a, 0, sizeof *a);
  a->B = B;
  a->T = T;
  a->rows = rows;
  a->chunk = chunk;
  a->shared = shared;
  a->recompute = recompute;
  a->res = tz_calloc((size_t)m->cfg.n_layer + 1, sizeof *a->res);
  a->layer = tz_calloc((size_t)m->cfg.n_layer, sizeof *a->layer);
}

/* lay_out_acts' size pass: the arena's bytes; `size` is left with its tensor count. */
static size_t acts_size(const tz_model *m, tz_acts *a, int training, carver *size) {
  memset(size, 0, sizeof *size);
  size->act = m->be->act, size->act_mm = m->be->act_mm;
  return lay_out_acts(a, &m->cfg, size, training);
}

static int acts_alloc(tz_model *m, tz_acts *a, int B, int T, int shared, int training, int recompute, int rows,
                      int chunk) {
  acts_setup(m, a, B, T, shared, recompute, rows, chunk);
  carver size;
  a->bytes = acts_size(m, a, training, &size);
  a->bufs = tz_calloc((size_t)size.n, sizeof *a->bufs);
  carver cv = {0};
  cv.act = m->be->act, cv.act_mm = m->be->act_mm;
  if (m->be->act_buffers) {
    cv.be = m->be, cv.a = a;
  } else {
    a->bufs[0] = m->be->alloc(m->be, a->bytes, training ? "activations" : "inference activations");
    if (!a->bufs[0]) {
      acts_free(m, a);
      return -1;
    }
    a->nbufs = 1;
    cv.buf = a->bufs[0];
  }
  lay_out_acts(a, &m->cfg, &cv, training);
  if (cv.failed) { /* tz_err names the tensor (be->alloc's `what`) */
    acts_free(m, a);
    return -1;
  }
  return 0;
}

static void acts_free(tz_model *m, tz_acts *a) {
  for (int i = 0; i < a->nbufs; i++) m->be->free(m->be, a->bufs[i]);
  free(a->bufs);
  free(a->res);
  free(a->layer);
  memset(a, 0, sizeof *a);
}

/* ---- sizes before allocating (train --recompute auto) ---- */
/* The bytes acts_alloc(m, a, B, T, shared, training, recompute, rows, chunk) gives a->bytes, by
 * the same setup and size pass, without allocating. */
static size_t acts_bytes(const tz_model *m, int B, int T, int shared, int training, int recompute, int rows,
                         int chunk) {
  tz_acts a;
  acts_setup(m, &a, B, T, shared, recompute, rows, chunk);
  carver size;
  size_t bytes = acts_size(m, &a, training, &size);
  free(a.res);
  free(a.layer);
  return bytes;
}

size_t tz_model_training_bytes(const tz_model *m, int B, int T, int recompute, size_t *acts) {
  size_t total = m->lay.total, n_buf = total, shard = total;
  if (m->dist_world > 1) { /* dist_layout's padding */
    shard = tz_dist_shard_size(total, m->dist_world);
    n_buf = shard * (size_t)m->dist_world;
  }
  size_t mv = m->dist_world > 1 && m->zero ? shard : total;
  size_t a = acts_bytes(m, B, T, 0, 1, recompute, 0, tz_model_logits_rows(m, B * T, m->logits_rows));
  if (acts) *acts = a;
  /* the padded parameter buffer replaces the unpadded one: (n_buf − total) more; grads; m, v */
  return (n_buf - total) * sizeof(float) + n_buf * sizeof(float) + 2 * mv * sizeof(float) + a;
}

size_t tz_model_inference_bytes(const tz_model *m, int rows) {
  dims d = dims_of(&m->cfg);
  size_t kv = (size_t)d.L * rows * m->cfg.max_seq_len * d.nkv * d.hd * tz_dtype_size(m->be->act);
  return 2 * kv + acts_bytes(m, 1, m->cfg.max_seq_len, 1, 0, 0, rows, 0);
}

/* ---- lifecycle ---- */
/* The update's parts (tz_model.upd_r0): the ranges (one per tensor, in layout order) cut where
 * each layer's first tensor (its pre-norm weight) and the final norm begin. */
static void upd_parts(tz_model *m) {
  int L = m->cfg.n_layer, r = 0;
  m->upd_r0 = tz_calloc((size_t)L + 3, sizeof *m->upd_r0);
  m->upd_ticket = tz_calloc((size_t)L + 2, sizeof *m->upd_ticket);
  for (int k = 1; k <= L + 1; k++) {
    size_t at = k <= L ? m->lay.layer[k - 1].norm1_w : m->lay.normf_w;
    while (r < m->n_ranges && m->ranges[r].off < at) r++;
    m->upd_r0[k] = r;
  }
  m->upd_r0[L + 2] = m->n_ranges;
}

int tz_model_create(tz_backend *be, const tz_config *cfg, tz_model **out) {
  tz_model *m = tz_calloc(1, sizeof *m);
  m->cfg = *cfg;
  m->be = be;
  tz_layout_build(cfg, &m->lay);
  m->params = be->alloc(be, m->lay.total * sizeof(float), "params");
  if (!m->params) {
    tz_layout_free(&m->lay);
    free(m);
    return -1;
  }
  if (be->params_mirror) be->params_mirror(be, m->params);
  m->n_ranges = m->lay.n;
  m->ranges = tz_calloc((size_t)m->lay.n, sizeof *m->ranges);
  for (int i = 0; i < m->lay.n; i++) {
    m->ranges[i].off = m->lay.t[i].off;
    m->ranges[i].n = m->lay.t[i].numel;
    m->ranges[i].decay = (float)m->lay.t[i].decay;
  }
  upd_parts(m);
  *out = m;
  return 0;
}

void tz_model_free(tz_model *m) {
  if (!m) return;
  tz_backend *be = m->be;
  tz_model_settle(m); /* (an update still queued writes params, m, v: before they are freed) */
  acts_free(m, &m->train);
  acts_free(m, &m->infer);
  tz_buf *bufs[] = {m->params, m->grads, m->m, m->v, m->kcache, m->vcache};
  for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++)
    if (bufs[i]) be->free(be, bufs[i]);
  tz_layout_free(&m->lay);
  free(m->upd_r0);
  free(m->upd_ticket);
  free(m->ranges);
  free(m->zranges);
  free(m->gz_ranges);
  free(m->host_losses);
  free(m);
}

/* Initial weights, as GPT-2 / llm.c: N(0, 0.02) for matrices and embeddings, N(0, 0.02 /
 * sqrt(2·n_layer)) for the projections into the residual stream, ones / zeros for norms and
 * biases, zero padded-vocabulary rows. One PCG32 stream (seed, stream 0x7e29a4) supplies the
 * normals tensor after tensor, element after element (two draws each, tz_rng_normal). Why in
 * parallel: one thread takes ~24–34 ns a normal (double log, sqrt, cos; this 2-core
 * development machine), so GPT-2 1.5B's 1.56 B weights cost ~40–50 s on one thread, most of
 * the more than a minute it took to its first step on the H200 host (2026-12-03). The stream is
 * cut into chunks of CH elements, each started with tz_rng_advance at its own draw index, so the
 * weights are the same bits as the one-thread loop's for any thread count (test_model checks
 * it against that loop). */
void tz_model_init_weights(tz_model *m, uint64_t seed) {
  enum { CH = 1 << 18 };
  const tz_layout *lay = &m->lay;
  float *p = tz_malloc(lay->total * sizeof(float));
  tz_rng rng0;
  tz_rng_seed(&rng0, seed, 0x7e29a4);
  float std = 0.02f, std_resid = 0.02f / sqrtf(2.0f * m->cfg.n_layer);
  /* per tensor: the elements that take a value (the padded vocabulary rows do not), its first
   * normal's index in the stream, its first chunk */
  size_t *live = tz_malloc((size_t)lay->n * sizeof *live);
  uint64_t *first = tz_malloc((size_t)lay->n * sizeof *first);
  size_t *chunk0 = tz_malloc(((size_t)lay->n + 1) * sizeof *chunk0);
  uint64_t drawn = 0;
  chunk0[0] = 0;
  for (int i = 0; i < lay->n; i++) {
    const tz_tensor_info *t = &lay->t[i];
    live[i] = t->off == lay->wte || t->off == lay->lm_head ? (size_t)m->cfg.vocab_size * t->shape[1] : t->numel;
    first[i] = drawn;
    if (t->init == 2 || t->init == 3) drawn += live[i];
    chunk0[i + 1] = chunk0[i] + (t->numel + CH - 1) / CH;
  }
  const long nchunk = (long)chunk0[lay->n];
#pragma omp parallel for schedule(dynamic, 4)
  for (long c = 0; c < nchunk; c++) {
    int i = 0; /* the tensor of chunk c: the last i with chunk0[i] <= c (a binary search) */
    for (int lo = 0, hi = lay->n - 1; lo <= hi;) {
      int mid = (lo + hi) / 2;
      if (chunk0[mid] <= (size_t)c) i = mid, lo = mid + 1;
      else hi = mid - 1;
    }
    const tz_tensor_info *t = &lay->t[i];
    const size_t n = live[i];
    size_t j0 = ((size_t)c - chunk0[i]) * CH, j1 = j0 + CH < t->numel ? j0 + CH : t->numel;
    float *x = p + t->off;
    tz_rng rng = rng0;
    if (t->init == 2 || t->init == 3) tz_rng_advance(&rng, 2 * (first[i] + j0));
    float sd = t->init == 3 ? std_resid : std;
    for (size_t j = j0; j < j1; j++) {
      float v = 0.0f;
      if (j < n) {
        if (t->init == 1) v = 1.0f;
        else if (t->init == 2 || t->init == 3) v = sd * tz_rng_normal(&rng);
      }
      x[j] = v;
    }
  }
  free(live);
  free(first);
  free(chunk0);
  tz_model_set_params(m, p);
  free(p);
}

void tz_model_get_params(tz_model *m, float *dst) {
  tz_model_settle(m);
  m->be->download(m->be, dst, P(m, 0), m->lay.total * sizeof(float));
}
void tz_model_set_params(tz_model *m, const float *src) {
  tz_model_settle(m);
  m->be->upload(m->be, P(m, 0), src, m->lay.total * sizeof(float));
}

/* Data parallelism: pad params to n_buf floats (a new buffer, the parameters copied over and
 * the backend's mirror registered again), and cut the AdamW ranges to this rank's shard. */
static int dist_layout(tz_model *m) {
  size_t total = m->lay.total;
  m->shard_n = m->n_buf = total;
  if (m->dist_world <= 1) {
    m->zero = 0;
    return 0;
  }
  m->shard_n = tz_dist_shard_size(total, m->dist_world);
  m->n_buf = m->shard_n * (size_t)m->dist_world;
  tz_backend *be = m->be;
  tz_buf *p = be->alloc(be, m->n_buf * sizeof(float), "params");
  if (!p) return -1;
  be->copy(be, (tz_slice){p, 0}, (tz_slice){m->params, 0}, total * sizeof(float));
  if (be->params_mirror) be->params_mirror(be, p);
  be->free(be, m->params);
  m->params = p;
  if (m->zero) {
    size_t first, n;
    tz_model_shard(m, &first, &n);
    m->zranges = tz_calloc((size_t)m->n_ranges + 1, sizeof *m->zranges);
    for (int i = 0; i < m->n_ranges; i++) {
      size_t a = m->ranges[i].off, b = a + m->ranges[i].n;
      if (a < first) a = first;
      if (b > first + n) b = first + n;
      if (a < b) m->zranges[m->n_zranges++] = (tz_range){a - first, b - a, m->ranges[i].decay};
    }
  }
  return 0;
}

void tz_model_shard(const tz_model *m, size_t *first, size_t *n) {
  size_t total = m->lay.total, a = (size_t)m->dist_rank * m->shard_n;
  if (m->dist_world <= 1) a = 0;
  *first = a < total ? a : total;
  *n = a < total ? (total - a < m->shard_n ? total - a : m->shard_n) : 0;
}

int tz_model_logits_rows(const tz_model *m, int N, int want) {
  if (want > 0) return want < N ? want : N;
  size_t bytes = (size_t)N * (size_t)m->cfg.padded_vocab * tz_dtype_size(m->be->act);
  if (bytes <= TZ_LOGITS_AUTO_BYTES) return N;
  size_t k = (bytes + TZ_LOGITS_CHUNK_BYTES - 1) / TZ_LOGITS_CHUNK_BYTES;
  size_t R = ((size_t)N + k - 1) / k;
  R = (R + 63) / 64 * 64;
  return R < (size_t)N ? (int)R : N;
}

int tz_model_alloc_training(tz_model *m, int B, int T) {
  if (B <= 0 || T <= 0) return tz_err("batch: B=%d and T=%d must be positive", B, T);
  if (T > m->cfg.max_seq_len)
    return tz_err("seq_len: T=%d is above the model's context max_seq_len=%d", T, m->cfg.max_seq_len);
  if (m->logits_rows < 0)
    return tz_err("logits chunk: %d rows (must be >= 1, or 0 for the automatic choice)", m->logits_rows);
  if (dist_layout(m)) return -1;
  size_t bytes = m->n_buf * sizeof(float), mv = (m->zero ? m->shard_n : m->lay.total) * sizeof(float);
  tz_backend *be = m->be;
  if (!(m->grads = be->alloc(be, bytes, "grads")) || !(m->m = be->alloc(be, mv, "adamw m")) ||
      !(m->v = be->alloc(be, mv, "adamw v")))
    return -1;
  m->host_losses = tz_calloc((size_t)B * T, sizeof(float));
  int N = B * T;
  return acts_alloc(m, &m->train, B, T, 0, 1, m->recompute, 0, tz_model_logits_rows(m, N, m->logits_rows));
}

int tz_model_alloc_inference_rows(tz_model *m, int rows) {
  if (rows < 1 || rows > m->cfg.max_seq_len)
    return tz_err("batch: %d rows (must be 1..%d, the context max_seq_len)", rows, m->cfg.max_seq_len);
  dims d = dims_of(&m->cfg);
  size_t n = (size_t)d.L * rows * m->cfg.max_seq_len * d.nkv * d.hd * tz_dtype_size(m->be->act);
  if (!(m->kcache = m->be->alloc(m->be, n, "kv cache")) ||
      !(m->vcache = m->be->alloc(m->be, n, "kv cache")))
    return -1;
  return acts_alloc(m, &m->infer, 1, m->cfg.max_seq_len, 1, 0, 0, rows, 0);
}

int tz_model_alloc_inference(tz_model *m) { return tz_model_alloc_inference_rows(m, 1); }

static int cmp_size(const void *a, const void *b) {
  size_t x = *(const size_t *)a, y = *(const size_t *)b;
  return x < y ? -1 : x > y;
}
/* The gradients a backward writes whole with one matmul_at (acc = 0 on a step's first
 * micro-batch, wacc()): every layer's linear weights (llama's wq|wk|wv and w1|w3 each one
 * matrix of several layout tensors), and lm_head (the classifier's first chunk; tied, it is
 * wte, to which embed_bwd then adds). Everything else -- biases and norm weights (column sums
 * that add), wpe and an untied wte (embed_bwd's scatter-add), the padding past lay.total -- is
 * zero-filled by tz_model_zero_grads: the runs between the matrices (be->zero_ranges, else a
 * fill each). */
static void build_gz_ranges(tz_model *m) {
  dims d = dims_of(&m->cfg);
  size_t n = m->n_buf ? m->n_buf : m->lay.total, pos = 0, C = (size_t)d.C;
  size_t *w = tz_calloc(2 * (4 * (size_t)d.L + 1), sizeof *w); /* written [start, end) pairs */
  int k = 0;
  w[2 * k] = m->lay.lm_head, w[2 * k + 1] = m->lay.lm_head + (size_t)d.Vp * C, k++;
  for (int l = 0; l < d.L; l++) {
    const tz_layer_offsets *o = &m->lay.layer[l];
    size_t mat[4][2] = {{o->qkv_w, (size_t)d.Q * C}, {o->proj_w, C * C}, {o->fc_w, (size_t)d.F2 * C},
                        {o->fcproj_w, C * (size_t)d.F}};
    for (int j = 0; j < 4; j++) w[2 * k] = mat[j][0], w[2 * k + 1] = mat[j][0] + mat[j][1], k++;
  }
  qsort(w, (size_t)k, 2 * sizeof *w, cmp_size); /* pairs by start (they do not overlap) */
  m->gz_ranges = tz_calloc(2 * (size_t)k + 2, sizeof *m->gz_ranges);
  m->n_gz_ranges = 0;
  for (int i = 0; i <= k; i++) {
    size_t start = i < k ? w[2 * i] : n;
    if (start > pos) { /* the run [pos, start) to fill */
      m->gz_ranges[2 * m->n_gz_ranges] = pos;
      m->gz_ranges[2 * m->n_gz_ranges + 1] = start - pos;
      m->n_gz_ranges++;
    }
    if (i < k) pos = w[2 * i + 1];
  }
  free(w);
}

void tz_model_zero_grads(tz_model *m) {
  tz_backend *be = m->be;
  /* behind a pending update on the side queue, which still reads the gradients (the forward
   * waits for it before the backward writes any: tz_model_settle at its end) */
  int side = m->upd_last != 0;
  if (side) be->side_begin(be);
  if (!be->grads_written) {
    be->fill(be, G(m, 0), 0.0f, m->n_buf ? m->n_buf : m->lay.total, TZ_F32);
    m->grads_fresh = 0; /* (never set on such a backend: a guard) */
  } else {
    if (!m->gz_ranges) build_gz_ranges(m);
    if (be->zero_ranges)
      be->zero_ranges(be, m->grads, m->gz_ranges, m->n_gz_ranges);
    else
      for (int i = 0; i < m->n_gz_ranges; i++)
        be->fill(be, G(m, m->gz_ranges[2 * i]), 0.0f, m->gz_ranges[2 * i + 1], TZ_F32);
    m->grads_fresh = 1;
  }
  if (side) m->upd_last = be->side_end(be);
}

/* acc for a weight-gradient matmul: 0 (write) while the gradients are fresh from
 * tz_model_zero_grads with be->grads_written, else 1 (add). */
static int wacc(const tz_model *m) { return !m->grads_fresh; }

/* ---- forward ---- */

/* Pre-norm of either family: RMSNorm (llama, b absent) or LayerNorm (gpt2). */
static void norm_fwd(tz_model *m, tz_slice out, tz_slice mean, tz_slice rstd, tz_slice x,
                     size_t w, size_t b, int N) {
  tz_backend *be = m->be;
  if (m->cfg.arch == TZ_ARCH_GPT2)
    be->layernorm_fwd(be, out, mean, rstd, x, P(m, w), P(m, b), N, m->cfg.d_model, m->cfg.norm_eps);
  else
    be->rmsnorm_fwd(be, out, rstd, x, P(m, w), N, m->cfg.d_model, m->cfg.norm_eps);
}

/* dx += norm backward; dw (+db) accumulate. */
static void norm_bwd(tz_model *m, tz_slice dx, tz_slice dout, tz_slice x, tz_slice mean,
                     tz_slice rstd, size_t w, size_t b, int N) {
  tz_backend *be = m->be;
  if (m->cfg.arch == TZ_ARCH_GPT2)
    be->layernorm_bwd(be, dx, G(m, w), G(m, b), dout, x, P(m, w), mean, rstd, N, m->cfg.d_model);
  else
    be->rmsnorm_bwd(be, dx, G(m, w), dout, x, P(m, w), rstd, N, m->cfg.d_model);
}
/* GPT-2's norm_bwd with the bias gradient of the projection below the norm (pb: fcproj_b before
 * ln2, proj_b before ln1) summed from dx as it comes in -- that projection's output gradient --
 * by layernorm_bwd_rb; callers run it only where the backend offers it (proj_rb below). */
static void norm_bwd_rb(tz_model *m, tz_slice dx, tz_slice dout, tz_slice x, tz_slice mean, tz_slice rstd, size_t w,
                        size_t b, size_t pb, int N) {
  tz_backend *be = m->be;
  be->layernorm_bwd_rb(be, dx, G(m, w), G(m, b), G(m, pb), dout, x, P(m, w), mean, rstd, N, m->cfg.d_model);
}

/* The main queue waits for the side work up to `ticket` (0, or no side queue: nothing). */
static void side_wait(tz_model *m, int ticket) {
  if (ticket > 0) m->be->side_wait(m->be, ticket);
}

/* The main queue waits for part k of a pending update (tz_model.upd_ticket). */
static void upd_wait(tz_model *m, int k) {
  if (!m->upd_last) return;
  side_wait(m, m->upd_ticket[k]);
  m->upd_ticket[k] = 0;
}

void tz_model_settle(tz_model *m) {
  if (!m->upd_last) return;
  side_wait(m, m->upd_last); /* (the side runs in order: the newest ticket covers the rest) */
  memset(m->upd_ticket, 0, ((size_t)m->cfg.n_layer + 2) * sizeof *m->upd_ticket);
  m->upd_last = 0;
}

/* A linear layer's parameter gradients from its output gradient dy [N, Cout] and input x
 * [N, Cin]: W[Cout, Cin] (+)= dyᵀ·x (acc: wacc, or the classifier's chunks) and, with has_b,
 * b[Cout] += Σ_n dy[n, :] -- in one op where the backend offers it (matmul_at_db), else
 * matmul_at then bias_bwd, both on the backend's side queue where it has one (backend.h
 * side_*). Returns the side ticket the main queue must wait for (side_wait) before it
 * overwrites dy or x or touches dW, db; 0 when there is none. */
static int linear_dw(tz_model *m, size_t w, size_t b, int has_b, tz_slice dy, tz_slice x, int Cout, int N, int Cin,
                     int acc) {
  tz_backend *be = m->be;
  if (has_b && be->matmul_at_db) {
    be->matmul_at_db(be, G(m, w), G(m, b), dy, x, Cout, N, Cin, acc);
    return 0;
  }
  if (be->side_begin) be->side_begin(be);
  be->matmul_at(be, G(m, w), dy, x, Cout, N, Cin, acc);
  if (has_b) be->bias_bwd(be, G(m, b), dy, N, Cout);
  return be->side_begin ? (m->side_last = be->side_end(be)) : 0;
}

/* out [N, C_out] = a [N, K] · W[C_out, K]ᵀ + bias + res: a projection into the residual stream,
 * in the matmul's epilogue where the backend offers it (matmul_t_res), else matmul_t then add. */
static void proj_res(tz_model *m, tz_slice out, tz_slice a, size_t w, size_t bias, tz_slice res, int N, int K,
                     int Cout) {
  tz_backend *be = m->be;
  if (be->matmul_t_res) {
    be->matmul_t_res(be, out, a, P(m, w), P(m, bias), res, N, K, Cout);
    return;
  }
  be->matmul_t(be, out, a, P(m, w), P(m, bias), N, K, Cout, 0);
  be->add(be, out, out, res, (size_t)N * Cout);
}

/* Run the transformer over a.tokens (already uploaded) for rows at positions pos0..pos0+T-1.
 * kv != 0: decoding (B = 1) against the KV cache; the last row's logits left in row `row` of
 * a->logits. kv == 0 (training arenas): stops at the final norm nf; the classifier runs in
 * chunks (classify). */
static void forward(tz_model *m, tz_acts *a, int B, int T, int pos0, int kv, int row) {
  tz_backend *be = m->be;
  const tz_config *c = &m->cfg;
  dims d = dims_of(c);
  int N = B * T;
  int gpt2 = c->arch == TZ_ARCH_GPT2;
  tz_slice wpe = gpt2 ? tz_f32(P(m, m->lay.wpe), (size_t)pos0 * d.C) : TZ_NONE;
  upd_wait(m, 0); /* a pending update's parts, each just before its parameters are read */
  be->embed_fwd(be, a->res[0], a->tokens, P(m, m->lay.wte), wpe, B, T, d.C, d.Vp);
  if (m->debug_poison_acts && a == &m->train) { /* --debug-inject-inf: one row of +Inf */
    be->fill(be, a->res[0], INFINITY, (size_t)d.C, be->act);
    m->debug_poison_acts = 0;
  }
  size_t kvrow = (size_t)d.nkv * d.hd;
  for (int l = 0; l < d.L; l++) {
    const tz_layer_offsets *o = &m->lay.layer[l];
    tz_layer_acts *x = &a->layer[l];
    tz_slice in = a->res[l], out = a->res[l + 1];
    upd_wait(m, 1 + l);
    norm_fwd(m, x->n1, x->n1_mean, x->n1_rstd, in, o->norm1_w, o->norm1_b, N);
    be->matmul_t(be, x->qkv, x->n1, P(m, o->qkv_w), P(m, o->qkv_b), N, d.C, d.Q, 0);
    if (!gpt2) be->rope(be, x->qkv, B, T, d.nh, d.nkv, d.hd, pos0, c->rope_theta, +1);
    tz_slice q = x->qkv, k = A(m, x->qkv, (size_t)d.nh * d.hd),
             v = A(m, x->qkv, (size_t)(d.nh + d.nkv) * d.hd);
    if (kv) {
      size_t layer_off = ((size_t)l * a->rows + row) * c->max_seq_len * kvrow;
      tz_slice k0 = {m->kcache, 0}, v0 = {m->vcache, 0};
      k0 = A(m, k0, layer_off);
      v0 = A(m, v0, layer_off);
      tz_slice kc = A(m, k0, (size_t)pos0 * kvrow), vc = A(m, v0, (size_t)pos0 * kvrow);
      be->copy_rows(be, kc, kvrow, k, d.Q, T, (int)kvrow);
      be->copy_rows(be, vc, kvrow, v, d.Q, T, (int)kvrow);
      be->attention_fwd(be, x->att, TZ_NONE, q, k0, v0, 1, T, pos0 + T, pos0, d.nh, d.nkv,
                        d.hd, d.Q, (int)kvrow);
    } else {
      be->attention_fwd(be, x->att, x->lse, q, k, v, B, T, T, 0, d.nh, d.nkv, d.hd, d.Q, d.Q);
    }
    proj_res(m, x->mid, x->att, o->proj_w, o->proj_b, in, N, d.C, d.C);
    norm_fwd(m, x->n2, x->n2_mean, x->n2_rstd, x->mid, o->norm2_w, o->norm2_b, N);
    /* fc and GeLU in one matmul (its epilogue) where the backend offers it; only on the training
     * arena without recompute: the fused GeLU reads the fp32 sum, while recompute (backward)
     * rebuilds x->a from the stored h with gelu_fwd, which must give the same bits */
    if (gpt2 && be->matmul_t_gelu && a == &m->train && !a->recompute) {
      be->matmul_t_gelu(be, x->a, x->h, x->n2, P(m, o->fc_w), P(m, o->fc_b), N, d.C, d.F);
    } else {
      be->matmul_t(be, x->h, x->n2, P(m, o->fc_w), P(m, o->fc_b), N, d.C, d.F2, 0);
      if (gpt2) be->gelu_fwd(be, x->a, x->h, (size_t)N * d.F);
      else be->swiglu_fwd(be, x->a, x->h, N, d.F);
    }
    proj_res(m, out, x->a, o->fcproj_w, o->fcproj_b, x->mid, N, d.F, d.C);
  }
  tz_slice last = a->res[d.L];
  tz_model_settle(m); /* part L + 1, and zero_grads's fills queued behind the update */
  norm_fwd(m, a->nf, a->nf_mean, a->nf_rstd, last, m->lay.normf_w, m->lay.normf_b, N);
  if (kv) /* only the last row's logits are needed to pick the next token */
    be->matmul_t(be, A(m, a->logits, (size_t)row * d.Vp), tz_elems(a->nf, (size_t)(N - 1) * d.C, be->act_mm),
                 P(m, m->lay.lm_head), TZ_NONE, 1, d.C, d.Vp, 0);
}

/* ---- the classifier, in row chunks ----
 * Why: the logits of a whole batch, [B·T, Vp] in be->act, are the largest activation by far
 * for a large vocabulary: GPT-2 124M at B16 T1024 holds 1.65 GB of them in bf16 (CUDA) and
 * 3.3 GB in fp32 (CPU, WebGPU); a Llama-3-sized vocabulary (128K) 4.2 / 8.4 GB, and WebGPU
 * adapters (browsers above all) cap the size of one buffer. So the classifier runs over chunks
 * of R = a->chunk rows of nf, and the logits buffer holds only R rows: per chunk
 *   logits = nf[rows]·Wᵀ; fused cross-entropy (losses[rows]; logits become dlogits);
 *   training only: dnf[rows] = dlogits·W (into a->dtmp, which the backward starts from) and
 *   dW += dlogitsᵀ·nf[rows] (fp32, accumulated chunk after chunk).
 * The logits are consumed before the next chunk overwrites them, so the backward has no
 * lm_head part left: it starts at the final norm. Eval (no gradient) runs only the first two.
 * Cost: the same FLOPs as one chunk; each chunk after the first reads and writes the fp32 dW
 * once more (Vp·C·4 bytes each way: 155 MB for GPT-2 124M, by arithmetic ~0.07 ms for both at
 * the H200's ~4.8 TB/s) and the three products have R rows instead of B·T (smaller GEMMs: tile
 * quantisation, W read once per chunk). Memory saved: (B·T − R)·Vp activation elements.
 * Choice (tz_model_logits_rows): the whole batch while its logits take ≤ 3.5 GiB (GPT-2 124M
 * B16 T1024 is not chunked in bf16, 1.65 GB, nor in fp32, 3.3 GB = 3.07 GiB: the CPU's and
 * WebGPU's activation dtype; no new cost on the common case, whose speed on WebGPU was not
 * measured chunked); above (a 128K vocabulary at B16: 4.2 GB in bf16), chunks of
 * about 1 GiB each (near-equal, rows a multiple of 64: tensor-core tiles); `train
 * --logits-chunk ROWS` sets R (0: the whole batch).
 * Determinism: the chunks run in row order and every op is deterministic, so a run repeats its
 * bits; against one chunk only the fp32 summation order of dW (and the BLAS blocking of fewer
 * rows) differs. */
static void classify(tz_model *m, int train, float dscale) {
  tz_backend *be = m->be;
  tz_acts *a = &m->train;
  dims d = dims_of(&m->cfg);
  int N = a->B * a->T;
  for (int r0 = 0; r0 < N; r0 += a->chunk) {
    int R = N - r0 < a->chunk ? N - r0 : a->chunk;
    tz_slice nf = tz_elems(a->nf, (size_t)r0 * d.C, be->act_mm);
    be->matmul_t(be, a->logits, nf, P(m, m->lay.lm_head), TZ_NONE, R, d.C, d.Vp, 0);
    be->crossentropy(be, tz_f32(a->losses, (size_t)r0), a->logits, tz_f32(a->targets, (size_t)r0), R, d.V, d.Vp,
                     dscale);
    if (!train) continue;
    be->matmul(be, A(m, a->dtmp, (size_t)r0 * d.C), a->logits, P(m, m->lay.lm_head), R, d.Vp, d.C, 0);
    /* (dW on the side queue: it reads the dlogits, which the next chunk's matmul_t overwrites,
     * and nf, which only the next forward does; the backward waits for it before embed_bwd) */
    int t = linear_dw(m, m->lay.lm_head, 0, 0, a->logits, nf, d.Vp, R, d.C, r0 > 0 || wacc(m));
    if (r0 + R < N) side_wait(m, t);
  }
}

/* Upload a batch, run forward and the classifier with its fused cross-entropy (dlogits
 * scaled by dscale / counted rows). train: also the classifier's gradient (dnf in a->dtmp,
 * dW_lm accumulated), where backward() starts. Returns the number of counted rows; the
 * per-row losses stay on the device (a->losses) until mean_loss reads them. */
static int forward_record(tz_model *m, const int32_t *inputs, const int32_t *targets, float dscale, int train) {
  tz_acts *a = &m->train;
  tz_backend *be = m->be;
  int N = a->B * a->T;
  be->upload(be, a->tokens, inputs, (size_t)N * sizeof(int32_t));
  be->upload(be, a->targets, targets, (size_t)N * sizeof(int32_t));
  int counted = 0;
  for (int i = 0; i < N; i++) counted += targets[i] >= 0;
  forward(m, a, a->B, a->T, 0, 0, 0);
  classify(m, train, counted ? dscale / counted : 0.0f);
  return counted;
}

/* The mean loss over counted rows, downloaded from a->losses (a sync on GPU backends). */
static double mean_loss(tz_model *m, int counted) {
  tz_acts *a = &m->train;
  tz_backend *be = m->be;
  int N = a->B * a->T;
  float *losses = m->host_losses;
  be->download(be, losses, a->losses, (size_t)N * sizeof(float));
  double sum = 0;
  for (int i = 0; i < N; i++) sum += losses[i];
  return counted ? sum / counted : 0.0;
}

/* ---- backward ---- */
/* From dnf (a->dtmp, left by forward_record's classifier) down to the embeddings. */
static void backward(tz_model *m) {
  tz_backend *be = m->be;
  const tz_config *c = &m->cfg;
  tz_acts *a = &m->train;
  dims d = dims_of(c);
  int B = a->B, T = a->T, N = B * T;
  int gpt2 = c->arch == TZ_ARCH_GPT2;
  /* GPT-2's two projections into the residual stream (fc-proj, attention proj) have dres as
   * their output gradient, and dres is what the LayerNorm below each (ln2, ln1) reads and adds
   * to next: with layernorm_bwd_rb their bias gradients are summed in that norm's backward from
   * the dres it loads anyway, instead of by bias_bwd's own pass over dres (linear_dw then skips
   * the bias). Nothing writes dres between the two uses. */
  const int proj_rb = gpt2 && be->layernorm_bwd_rb != NULL;
  /* The weight and bias gradients go to the backend's side queue where it has one (linear_dw)
   * and run beside the chain of input gradients. Each reads its layer's output gradient and
   * stored input and writes its own dW (db) only; the main queue waits for one (side_wait, its
   * ticket) before it overwrites what that one reads:
   *   fcproj's dW reads dres, a     -- before ln2's backward adds into dres    (t_fcproj)
   *   fc's dW reads dh, n2          -- before the next layer's writes dh        (t_fc)
   *   proj's dW reads dres, att     -- before ln1's backward adds into dres    (t_proj)
   *   qkv's dW reads dqkv, n1       -- before the next layer's attention backward (t_qkv)
   *   lm_head's dW (classify) reads the dlogits and nf -- before embed_bwd, which adds the
   *   token embedding's gradient into the same tensor when wte is tied to lm_head.
   * The side runs its work in order, so a wait covers every earlier ticket too (some of the
   * waits below are implied by an earlier one; each is kept where its hazard is). Under
   * recompute, a layer's a, n2 and n1 are rebuilt in buffers the layers share: the layer
   * above's side work first (t_qkv, its last). And all of it before the backward returns: the
   * next forward rewrites every activation, and the optimizer reads the gradients. */
  int t_fc = 0, t_qkv = 0;
  size_t NC = (size_t)N * d.C;
  be->fill(be, a->dres, 0.0f, NC, be->act);
  norm_bwd(m, a->dres, a->dtmp, a->res[d.L], a->nf_mean, a->nf_rstd, m->lay.normf_w,
           m->lay.normf_b, N);
  for (int l = d.L - 1; l >= 0; l--) {
    const tz_layer_offsets *o = &m->lay.layer[l];
    tz_layer_acts *x = &a->layer[l];
    if (a->recompute) { /* this layer's a, n2, n1 were overwritten by later layers' forward */
      side_wait(m, t_qkv); /* (the shared a, n2, n1 read by the layer above's dW: in order, all) */
      norm_fwd(m, x->n2, x->n2_mean, x->n2_rstd, x->mid, o->norm2_w, o->norm2_b, N);
      if (gpt2) be->gelu_fwd(be, x->a, x->h, (size_t)N * d.F);
      else be->swiglu_fwd(be, x->a, x->h, N, d.F);
      norm_fwd(m, x->n1, x->n1_mean, x->n1_rstd, a->res[l], o->norm1_w, o->norm1_b, N);
    }
    /* MLP: res[l+1] = mid + a·Wfcprojᵀ + b. dh = gelu'(h) ⊙ (dres·Wfcproj) (and fc's bias
     * gradient), or llama's dgu = swiglu_bwd(dres·Wdown, gu), in one matmul where the backend
     * offers it, else through da */
    const int dgelu = gpt2 && be->matmul_dgelu, dswiglu = !gpt2 && be->matmul_dswiglu;
    /* fc's bias gradient in matmul_dgelu (its epilogue's, or bias_bwd's kernel and bits on its
     * output) unless linear_dw sums it with fc's weight gradient, in one op or on the side */
    const int fcb_dgelu = dgelu && !be->matmul_at_db && !be->side_begin;
    side_wait(m, t_fc); /* (the layer above's fc dW has read dh) */
    if (dgelu)
      be->matmul_dgelu(be, a->dh, fcb_dgelu ? G(m, o->fc_b) : TZ_NONE, a->dres, P(m, o->fcproj_w), x->h, N, d.C,
                       d.F);
    else if (dswiglu) be->matmul_dswiglu(be, a->dh, a->dres, P(m, o->fcproj_w), x->h, N, d.C, d.F);
    else be->matmul(be, a->da, a->dres, P(m, o->fcproj_w), N, d.C, d.F, 0);
    int t_fcproj = linear_dw(m, o->fcproj_w, o->fcproj_b, gpt2 && !proj_rb, a->dres, x->a, d.C, N, d.F, wacc(m));
    if (!gpt2) {
      if (!dswiglu) be->swiglu_bwd(be, a->dh, a->da, x->h, N, d.F);
    } else if (!dgelu) {
      be->gelu_bwd(be, a->dh, x->h, a->da, (size_t)N * d.F);
    }
    be->matmul(be, a->dtmp, a->dh, P(m, o->fc_w), N, d.F2, d.C, 0);
    t_fc = linear_dw(m, o->fc_w, o->fc_b, gpt2 && !fcb_dgelu, a->dh, x->n2, d.F2, N, d.C, wacc(m));
    side_wait(m, t_fcproj);
    if (proj_rb) /* (and fcproj's bias gradient from dres as it comes in) */
      norm_bwd_rb(m, a->dres, a->dtmp, x->mid, x->n2_mean, x->n2_rstd, o->norm2_w, o->norm2_b, o->fcproj_b, N);
    else
      norm_bwd(m, a->dres, a->dtmp, x->mid, x->n2_mean, x->n2_rstd, o->norm2_w, o->norm2_b, N);
    /* attention: mid = res[l] + att·Wprojᵀ + b */
    be->matmul(be, a->dtmp, a->dres, P(m, o->proj_w), N, d.C, d.C, 0);
    int t_proj = linear_dw(m, o->proj_w, o->proj_b, gpt2 && !proj_rb, a->dres, x->att, d.C, N, d.C, wacc(m));
    side_wait(m, t_qkv); /* (the layer above's qkv dW has read dqkv) */
    tz_slice q = x->qkv, k = A(m, q, (size_t)d.nh * d.hd), v = A(m, q, (size_t)(d.nh + d.nkv) * d.hd);
    tz_slice dq = a->dqkv, dk = A(m, dq, (size_t)d.nh * d.hd), dv = A(m, dq, (size_t)(d.nh + d.nkv) * d.hd);
    be->attention_bwd(be, dq, dk, dv, a->dtmp, q, k, v, x->att, x->lse, B, T, d.nh, d.nkv, d.hd,
                      d.Q, d.Q);
    if (!gpt2) be->rope(be, a->dqkv, B, T, d.nh, d.nkv, d.hd, 0, c->rope_theta, -1);
    be->matmul(be, a->dtmp, a->dqkv, P(m, o->qkv_w), N, d.Q, d.C, 0);
    t_qkv = linear_dw(m, o->qkv_w, o->qkv_b, gpt2, a->dqkv, x->n1, d.Q, N, d.C, wacc(m));
    side_wait(m, t_proj);
    if (proj_rb) /* (and proj's bias gradient from dres as it comes in) */
      norm_bwd_rb(m, a->dres, a->dtmp, a->res[l], x->n1_mean, x->n1_rstd, o->norm1_w, o->norm1_b, o->proj_b, N);
    else
      norm_bwd(m, a->dres, a->dtmp, a->res[l], x->n1_mean, x->n1_rstd, o->norm1_w, o->norm1_b, N);
  }
  side_wait(m, m->side_last); /* (all of it: embed_bwd adds into a tied lm_head's gradient) */
  m->side_last = 0;
  be->embed_bwd(be, G(m, m->lay.wte), gpt2 ? G(m, m->lay.wpe) : TZ_NONE, a->dres, a->tokens, B, T,
                d.C, d.Vp);
  m->grads_fresh = 0; /* every weight gradient written: the next micro-batch adds */
}

double tz_model_train_micro(tz_model *m, const int32_t *inputs, const int32_t *targets,
                            float dscale) {
  /* the losses are read after the backward is recorded: a GPU backend runs the forward
   * while the host records the backward, instead of idling at a download between them */
  int counted = forward_record(m, inputs, targets, dscale, 1);
  backward(m);
  return mean_loss(m, counted);
}

double tz_model_eval_loss(tz_model *m, const int32_t *inputs, const int32_t *targets) {
  return mean_loss(m, forward_record(m, inputs, targets, 0.0f, 0));
}

void tz_model_forward_logits(tz_model *m, const int32_t *inputs, float *logits) {
  tz_acts *a = &m->train;
  tz_backend *be = m->be;
  dims d = dims_of(&m->cfg);
  int N = a->B * a->T;
  be->upload(be, a->tokens, inputs, (size_t)N * sizeof(int32_t));
  forward(m, a, a->B, a->T, 0, 0, 0);
  for (int r0 = 0; r0 < N; r0 += a->chunk) { /* the classifier's chunks (classify) */
    int R = N - r0 < a->chunk ? N - r0 : a->chunk;
    be->matmul_t(be, a->logits, tz_elems(a->nf, (size_t)r0 * d.C, be->act_mm), P(m, m->lay.lm_head), TZ_NONE, R,
                 d.C, d.Vp, 0);
    for (int i = 0; i < R; i++)
      be->download_act(be, logits + (size_t)(r0 + i) * d.V, A(m, a->logits, (size_t)i * d.Vp), (size_t)d.V);
  }
}

double tz_model_grad_norm(tz_model *m) {
  tz_backend *be = m->be;
  tz_model_settle(m); /* (nothing pending after a backward: for callers without one) */
  tz_slice out = m->train.losses; /* reuse one float of scratch */
  be->sum_sq(be, out, G(m, 0), m->lay.total);
  float ss;
  be->download(be, &ss, out, sizeof ss);
  return sqrt((double)ss);
}

double tz_model_grad_sumsq(tz_model *m, size_t first, size_t n) {
  if (!n) return 0.0;
  tz_backend *be = m->be;
  tz_model_settle(m);
  tz_slice out = m->train.losses; /* reuse one float of scratch */
  be->sum_sq(be, out, G(m, first), n);
  float ss;
  be->download(be, &ss, out, sizeof ss);
  return (double)ss;
}

int tz_model_adamw(tz_model *m, const tz_adamw_hp *hp) {
  /* bias correction divides by 1 − β^t: t = 0 would write NaN into every parameter */
  if (hp->t < 1) return tz_err("adamw: step t=%d is not 1-based (t >= 1)", hp->t);
  if (m->zero) { /* ZeRO-1: the moments hold this rank's shard; ranges are relative to it */
    size_t first, n;
    tz_model_shard(m, &first, &n);
    if (m->n_zranges)
      m->be->adamw(m->be, P(m, first), G(m, first), (tz_slice){m->m, 0}, (tz_slice){m->v, 0}, m->zranges,
                   m->n_zranges, hp);
    return 0;
  }
  tz_backend *be = m->be;
  tz_slice p = P(m, 0), g = G(m, 0), mm = {m->m, 0}, vv = {m->v, 0};
  if (!be->side_begin || !be->side_update) {
    be->adamw(be, p, g, mm, vv, m->ranges, m->n_ranges, hp);
    return 0;
  }
  /* On the side queue, in parts (tz_model.upd_ticket): the next forward's embedding waits for
   * part 0 only, and each layer for its own, so the update of layer l runs beside the forward
   * of the layers below it. Why: AdamW is memory-bound (~30 bytes per parameter: 1.3 ms of a
   * 31 ms GPT-2 124M step on an H100, session 34's profile) while the forward's matmuls are
   * compute-bound. Measured (H100, docs/PERF.md): +0.3-0.9 % at 124M, +0.3 % at 1.5B -- less
   * than the arithmetic, as a cuBLASLt sm_90 block holds an SM's registers and the update only
   * fills the gaps between the matmuls' waves. */
  for (int k = 0; k < m->cfg.n_layer + 2; k++) {
    int r0 = m->upd_r0[k], n = m->upd_r0[k + 1] - r0;
    if (!n) continue;
    be->side_begin(be);
    be->adamw(be, p, g, mm, vv, m->ranges + r0, n, hp);
    m->upd_last = m->upd_ticket[k] = be->side_end(be);
  }
  return 0;
}

void tz_model_feed_row(tz_model *m, int row, const int32_t *tokens, int n, int pos0) {
  tz_acts *a = &m->infer;
  tz_backend *be = m->be;
  TZ_ASSERT(n > 0 && pos0 + n <= m->cfg.max_seq_len && row >= 0 && row < a->rows);
  be->upload(be, a->tokens, tokens, (size_t)n * sizeof(int32_t));
  forward(m, a, 1, n, pos0, 1, row);
}

void tz_model_decode(tz_model *m, const int32_t *tokens, int n, int pos0, float *logits) {
  tz_model_feed_row(m, 0, tokens, n, pos0);
  m->be->download_act(m->be, logits, m->infer.logits, (size_t)m->cfg.vocab_size);
}

int tz_model_step_fused(const tz_model *m) {
  const tz_backend *be = m->be;
  return be->embed_pos_fwd && be->attention_decode && (m->cfg.arch == TZ_ARCH_GPT2 || be->rope_pos);
}

/* out = [gelu](norm(x)·Wᵀ + b) through the backend's fused norm_matmul_t when it takes B rows
 * (returns 1); else the norm alone into n (returns 0: the caller runs the matmul). */
static int norm_matmul(tz_model *m, tz_slice out, tz_slice n, tz_slice mean, tz_slice rstd, tz_slice x, size_t nw,
                       size_t nb, size_t w, size_t b, int B, int N, int gelu) {
  tz_backend *be = m->be;
  int gpt2 = m->cfg.arch == TZ_ARCH_GPT2;
  if (be->norm_matmul_t && be->norm_matmul_t(be, out, x, P(m, nw), gpt2 ? P(m, nb) : TZ_NONE, m->cfg.norm_eps,
                                             P(m, w), P(m, b), B, m->cfg.d_model, N, gelu))
    return 1;
  if (!gelu) norm_fwd(m, n, mean, rstd, x, nw, nb, B);
  return 0;
}

/* One decoding step of rows 0..B-1 on the backend's batched decoding ops: every per-step
 * value (tokens, positions) is read from device memory, so the backend may record it once
 * per B and replay it. The math of forward()'s kv path, with one residual buffer (res[0])
 * that the attention and MLP projections accumulate into (matmul_t with acc = 1: x += y·Wᵀ
 * + b, one op instead of a matmul and an add; the sum is rounded once instead of twice), and
 * each pre-norm folded into the matmul that reads it where the backend offers norm_matmul_t
 * (gpt2's GeLU too): per layer 5 ops instead of 10 on CUDA. */
static void forward_step(tz_model *m, int B) {
  tz_backend *be = m->be;
  const tz_config *c = &m->cfg;
  tz_acts *a = &m->infer;
  dims d = dims_of(c);
  int gpt2 = c->arch == TZ_ARCH_GPT2;
  be->embed_pos_fwd(be, a->res[0], a->tokens, a->pos, P(m, m->lay.wte), gpt2 ? P(m, m->lay.wpe) : TZ_NONE, B, d.C,
                    d.Vp);
  size_t kvrow = (size_t)d.nkv * d.hd;
  for (int l = 0; l < d.L; l++) {
    const tz_layer_offsets *o = &m->lay.layer[l];
    tz_layer_acts *x = &a->layer[l];
    tz_slice x0 = a->res[0]; /* the residual stream, updated in place */
    if (!norm_matmul(m, x->qkv, x->n1, x->n1_mean, x->n1_rstd, x0, o->norm1_w, o->norm1_b, o->qkv_w, o->qkv_b, B, d.Q, 0))
      be->matmul_t(be, x->qkv, x->n1, P(m, o->qkv_w), P(m, o->qkv_b), B, d.C, d.Q, 0);
    if (!gpt2) be->rope_pos(be, x->qkv, a->pos, B, d.nh, d.nkv, d.hd, c->rope_theta);
    size_t layer_off = (size_t)l * a->rows * c->max_seq_len * kvrow;
    tz_slice kc = A(m, (tz_slice){m->kcache, 0}, layer_off), vc = A(m, (tz_slice){m->vcache, 0}, layer_off);
    be->attention_decode(be, x->att, kc, vc, x->qkv, a->pos, B, d.nh, d.nkv, d.hd, d.Q, c->max_seq_len);
    be->matmul_t(be, x0, x->att, P(m, o->proj_w), P(m, o->proj_b), B, d.C, d.C, 1);
    if (gpt2 && norm_matmul(m, x->a, x->n2, x->n2_mean, x->n2_rstd, x0, o->norm2_w, o->norm2_b, o->fc_w, o->fc_b, B,
                            d.F, 1)) {
      /* fc and GeLU in one op: a written directly */
    } else {
      if (!norm_matmul(m, x->h, x->n2, x->n2_mean, x->n2_rstd, x0, o->norm2_w, o->norm2_b, o->fc_w, o->fc_b, B, d.F2, 0))
        be->matmul_t(be, x->h, x->n2, P(m, o->fc_w), P(m, o->fc_b), B, d.C, d.F2, 0);
      if (gpt2) be->gelu_fwd(be, x->a, x->h, (size_t)B * d.F);
      else be->swiglu_fwd(be, x->a, x->h, B, d.F);
    }
    be->matmul_t(be, x0, x->a, P(m, o->fcproj_w), P(m, o->fcproj_b), B, d.F, d.C, 1);
  }
  if (!norm_matmul(m, a->logits, a->nf, a->nf_mean, a->nf_rstd, a->res[0], m->lay.normf_w, m->lay.normf_b,
                   m->lay.lm_head, TZ_ABSENT, B, d.Vp, 0))
    be->matmul_t(be, a->logits, a->nf, P(m, m->lay.lm_head), TZ_NONE, B, d.C, d.Vp, 0);
}

/* The whole step in one backend call (backend.h's decode_step: GPT-2 only), described from the
 * layout; 1 when the backend queued it. The description is rebuilt each step (n_layer entries,
 * no allocation beyond it): the backend keeps what it needs. */
static int step_whole(tz_model *m, int B) {
  tz_backend *be = m->be;
  const tz_config *c = &m->cfg;
  if (!be->decode_step || c->arch != TZ_ARCH_GPT2) return 0;
  tz_acts *a = &m->infer;
  dims d = dims_of(c);
  size_t kvrow = (size_t)d.nkv * d.hd;
  tz_step_layer *ly = tz_malloc((size_t)d.L * sizeof *ly);
  for (int l = 0; l < d.L; l++) {
    const tz_layer_offsets *o = &m->lay.layer[l];
    size_t layer_off = (size_t)l * a->rows * c->max_seq_len * kvrow;
    ly[l] = (tz_step_layer){P(m, o->norm1_w), P(m, o->norm1_b), P(m, o->qkv_w), P(m, o->qkv_b),
                            P(m, o->proj_w),  P(m, o->proj_b),  P(m, o->norm2_w), P(m, o->norm2_b),
                            P(m, o->fc_w),    P(m, o->fc_b),    P(m, o->fcproj_w), P(m, o->fcproj_b),
                            A(m, (tz_slice){m->kcache, 0}, layer_off), A(m, (tz_slice){m->vcache, 0}, layer_off)};
  }
  tz_step_desc sd = {d.L, d.C, d.nh, d.nkv, d.hd, d.F, d.V, d.Vp, c->max_seq_len, c->norm_eps,
                     a->tokens, a->pos, P(m, m->lay.wte), P(m, m->lay.wpe), P(m, m->lay.normf_w),
                     P(m, m->lay.normf_b), P(m, m->lay.lm_head), a->logits, ly};
  int done = be->decode_step(be, &sd, B);
  free(ly);
  return done;
}

/* forward_step, replayed from its recording where the backend has one for B rows; the whole
 * step in one call where the backend offers that (decode_step). */
static void run_step(tz_model *m, int B) {
  tz_backend *be = m->be;
  if (step_whole(m, B)) return;
  if (be->replay && be->replay(be, B)) return;
  int rec = be->record_begin && be->record_begin(be, B);
  forward_step(m, B);
  if (rec && !be->record_end(be, B)) forward_step(m, B); /* not recorded: run the ops as usual */
}

void tz_model_step(tz_model *m, const int32_t *pos, int B) {
  tz_acts *a = &m->infer;
  tz_backend *be = m->be;
  tz_model_settle(m); /* (a recorded step waits for nothing inside it) */
  TZ_ASSERT(B >= 1 && B <= a->rows);
  for (int b = 0; b < B; b++) TZ_ASSERT(pos[b] >= 0 && pos[b] < m->cfg.max_seq_len);
  if (!tz_model_step_fused(m)) { /* the host path: one row after the other */
    int32_t *tok = tz_malloc((size_t)B * sizeof *tok);
    be->download(be, tok, a->tokens, (size_t)B * sizeof *tok);
    for (int b = 0; b < B; b++) tz_model_feed_row(m, b, tok + b, 1, pos[b]);
    free(tok);
    return;
  }
  be->upload(be, a->pos, pos, (size_t)B * sizeof *pos);
  run_step(m, B);
}

void tz_model_step_dev(tz_model *m, tz_slice pos, int B) {
  tz_acts *a = &m->infer;
  tz_model_settle(m);
  TZ_ASSERT(B >= 1 && B <= a->rows && tz_model_step_fused(m));
  m->be->copy(m->be, a->pos, pos, (size_t)B * sizeof(int32_t));
  run_step(m, B);
}
