/* safetensors reader and writer (format in safetensors.h). */
#include "formats/safetensors.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/progress.h" /* tz_plural */
#include "core/fileio.h"
#include "formats/formats.h"

#define MAX_HEADER (100u << 20) /* the reference implementation's limit */

float tz_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  float v;
  if (exp == 0) v = ldexpf((float)man, -24);                       /* zero / subnormal */
  else if (exp == 31) v = man ? NAN : INFINITY;                     /* inf / NaN */
  else v = ldexpf((float)(man | 0x400), (int)exp - 25);             /* normal */
  union { float f; uint32_t u; } x = {v};
  x.u |= sign;
  return x.f;
}

static int dtype_size(const char *d) {
  if (!strcmp(d, "F32")) return 4;
  if (!strcmp(d, "F16") || !strcmp(d, "BF16")) return 2;
  return 0;
}

/* Bytes per element of the dtypes the format defines (for the size check of tensors we do
 * not read); 0 for an unknown name. */
static int any_dtype_size(const char *d) {
  static const struct { const char *n; int s; } T[] = {
      {"BOOL", 1}, {"U8", 1}, {"I8", 1}, {"F8_E5M2", 1}, {"F8_E4M3", 1}, {"I16", 2}, {"U16", 2}, {"F16", 2},
      {"BF16", 2}, {"I32", 4}, {"U32", 4}, {"F32", 4}, {"I64", 8}, {"U64", 8}, {"F64", 8}};
  for (size_t i = 0; i < sizeof T / sizeof *T; i++)
    if (!strcmp(T[i].n, d)) return T[i].s;
  return 0;
}

/* A JSON number that is a non-negative integer below 2^53. */
static int get_u64(const cJSON *v, uint64_t *out) {
  if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0) || v->valuedouble > 9007199254740992.0 ||
      v->valuedouble != floor(v->valuedouble))
    return -1;
  *out = (uint64_t)v->valuedouble;
  return 0;
}

int tz_st_open(const char *path, tz_st_file *f) {
  memset(f, 0, sizeof *f);
  if (tz_fmt_map_open(path, &f->map)) return -1;
  f->path = tz_strdup(path);
  cJSON *h = NULL;
  const unsigned char *d = f->map.data;
  size_t size = f->map.size;
  if (size < 8) {
    tz_err("%s: truncated safetensors file: %zu byte%s, the header length needs 8", path, size, tz_plural((long long)size));
    goto fail;
  }
  uint64_t hl;
  memcpy(&hl, d, 8); /* little-endian hosts only (x86-64, aarch64) */
  if (hl > size - 8) {
    tz_err("%s: safetensors header length %llu runs past the end of the file (%zu bytes)", path,
           (unsigned long long)hl, size);
    goto fail;
  }
  if (hl < 2 || hl > MAX_HEADER) {
    tz_err("%s: safetensors header length %llu is out of range [2, %u]", path, (unsigned long long)hl, MAX_HEADER);
    goto fail;
  }
  h = cJSON_ParseWithLength((const char *)d + 8, (size_t)hl);
  if (!h || !cJSON_IsObject(h)) {
    tz_err("%s: safetensors header is not a JSON object", path);
    goto fail;
  }
  const unsigned char *base = d + 8 + hl;
  size_t avail = size - 8 - (size_t)hl;
  int cap = cJSON_GetArraySize(h);
  f->t = tz_calloc((size_t)(cap ? cap : 1), sizeof *f->t);
  for (const cJSON *e = h->child; e; e = e->next) {
    if (!strcmp(e->string, "__metadata__")) continue;
    const char *nm = e->string;
    tz_st_tensor *t = &f->t[f->n];
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype");
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(e, "shape");
    const cJSON *off = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
    if (!cJSON_IsObject(e) || !cJSON_IsString(dt) || !cJSON_IsArray(sh) || !cJSON_IsArray(off) ||
        cJSON_GetArraySize(off) != 2) {
      tz_err("%s: tensor '%s': header entry needs dtype, shape and data_offsets [begin, end]", path, nm);
      goto fail;
    }
    if (tz_st_find(f, nm)) {
      tz_err("%s: tensor '%s' appears twice in the header", path, nm);
      goto fail;
    }
    snprintf(t->dtype, sizeof t->dtype, "%s", dt->valuestring);
    int esz = any_dtype_size(dt->valuestring);
    if (!esz) {
      tz_err("%s: tensor '%s' has unknown dtype '%s'", path, nm, dt->valuestring);
      goto fail;
    }
    t->elem = dtype_size(dt->valuestring);
    t->ndim = cJSON_GetArraySize(sh);
    if (t->ndim > TZ_ST_MAX_DIM) {
      tz_err("%s: tensor '%s' has %d dimensions (at most %d)", path, nm, t->ndim, TZ_ST_MAX_DIM);
      goto fail;
    }
    double numel = 1;
    int i = 0;
    for (const cJSON *s = sh->child; s; s = s->next, i++) {
      uint64_t v;
      if (get_u64(s, &v)) {
        tz_err("%s: tensor '%s': shape entry %d is not a non-negative integer", path, nm, i);
        goto fail;
      }
      t->shape[i] = (int64_t)v;
      numel *= (double)v;
    }
    uint64_t b, en;
    if (get_u64(off->child, &b) || get_u64(off->child->next, &en) || b > en) {
      tz_err("%s: tensor '%s': data_offsets are not integers begin <= end", path, nm);
      goto fail;
    }
    if (en > avail) {
      tz_err("%s: tensor '%s': data_offsets [%llu, %llu] run past the data area (%zu bytes)", path, nm,
             (unsigned long long)b, (unsigned long long)en, avail);
      goto fail;
    }
    if (numel * esz != (double)(en - b)) {
      tz_err("%s: tensor '%s': data_offsets [%llu, %llu] hold %llu bytes but shape x %s needs %.0f", path, nm,
             (unsigned long long)b, (unsigned long long)en, (unsigned long long)(en - b), t->dtype, numel * esz);
      goto fail;
    }
    t->name = tz_strdup(nm);
    t->numel = (size_t)numel;
    t->data = base + b;
    t->nbytes = (size_t)(en - b);
    f->n++;
  }
  cJSON_Delete(h);
  return 0;
fail:
  cJSON_Delete(h);
  tz_st_close(f);
  return -1;
}

void tz_st_close(tz_st_file *f) {
  for (int i = 0; i < f->n; i++) free(f->t[i].name);
  free(f->t);
  free(f->path);
  tz_fmt_map_close(&f->map);
  memset(f, 0, sizeof *f);
}

const tz_st_tensor *tz_st_find(const tz_st_file *f, const char *name) {
  for (int i = 0; i < f->n; i++)
    if (f->t[i].name && !strcmp(f->t[i].name, name)) return &f->t[i];
  return NULL;
}

int tz_st_to_f32(const tz_st_file *f, const tz_st_tensor *t, float *dst) {
  if (!strcmp(t->dtype, "F32")) {
    memcpy(dst, t->data, t->numel * 4);
    return 0;
  }
  int bf = !strcmp(t->dtype, "BF16");
  if (!bf && strcmp(t->dtype, "F16"))
    return tz_err("%s: tensor '%s' has dtype %s; only F32, F16 and BF16 are supported", f->path, t->name, t->dtype);
  for (size_t i = 0; i < t->numel; i++) {
    uint16_t h;
    memcpy(&h, t->data + 2 * i, 2);
    dst[i] = bf ? tz_bf16_to_f32(h) : tz_f16_to_f32(h);
  }
  return 0;
}

int tz_st_write(const char *path, const tz_st_out *t, int n) {
  cJSON *h = cJSON_CreateObject();
  cJSON *meta = cJSON_AddObjectToObject(h, "__metadata__");
  cJSON_AddStringToObject(meta, "format", "pt");
  size_t off = 0;
  for (int i = 0; i < n; i++) {
    size_t numel = 1;
    cJSON *e = cJSON_AddObjectToObject(h, t[i].name);
    cJSON_AddStringToObject(e, "dtype", "F32");
    cJSON *sh = cJSON_AddArrayToObject(e, "shape");
    for (int k = 0; k < t[i].ndim; k++) {
      cJSON_AddItemToArray(sh, cJSON_CreateNumber((double)t[i].shape[k]));
      numel *= (size_t)t[i].shape[k];
    }
    cJSON *o = cJSON_AddArrayToObject(e, "data_offsets");
    cJSON_AddItemToArray(o, cJSON_CreateNumber((double)off));
    off += numel * 4;
    cJSON_AddItemToArray(o, cJSON_CreateNumber((double)off));
  }
  char *js = cJSON_PrintUnformatted(h);
  cJSON_Delete(h);
  size_t jl = strlen(js), padded = (jl + 7) / 8 * 8;
  char *hdr = tz_malloc(padded);
  memcpy(hdr, js, jl);
  memset(hdr + jl, ' ', padded - jl);
  free(js);
  uint64_t hl = padded;
  tz_afile af;
  int rc = tz_afile_open(&af, path);
  if (!rc) {
    tz_afile_write(&af, &hl, 8);
    tz_afile_write(&af, hdr, padded);
    for (int i = 0; i < n; i++) {
      size_t numel = 1;
      for (int k = 0; k < t[i].ndim; k++) numel *= (size_t)t[i].shape[k];
      tz_afile_write(&af, t[i].data, numel * 4);
    }
    rc = tz_afile_commit(&af);
  }
  free(hdr);
  return rc;
}
