/* safetensors files (Hugging Face): an 8-byte little-endian header length N, N bytes of JSON
 * header, then the raw little-endian tensor bytes. The header is an object mapping each tensor
 * name to {"dtype": "F32"|"F16"|"BF16"|..., "shape": [d0, d1, ...], "data_offsets": [begin,
 * end]} (offsets relative to the first byte after the header), plus an optional
 * "__metadata__" object of strings. Internal (src/formats).
 *
 * The reader maps the file and validates the whole header before anything is read: a header
 * length past the end of the file, a header that is not a JSON object, a tensor entry without
 * dtype / shape / data_offsets, data offsets out of the data area or not matching
 * shape × dtype size give a one-line error naming the file, the tensor and the value. Only
 * F32, F16 and BF16 tensors are accepted (others are refused when the tensor is read: a file
 * may carry tensors we never use). */
#ifndef TZ_FORMATS_SAFETENSORS_H
#define TZ_FORMATS_SAFETENSORS_H
#include <stddef.h>
#include <stdint.h>

#include "formats/fmt_util.h"

#define TZ_ST_MAX_DIM 8

typedef struct {
  char *name;
  char dtype[16];            /* as written in the header ("F32", "I64", ...) */
  int elem;                  /* bytes per element for F32/F16/BF16, 0 for other dtypes */
  int ndim;
  int64_t shape[TZ_ST_MAX_DIM];
  size_t numel;
  const unsigned char *data; /* inside the mapping (not aligned) */
  size_t nbytes;
} tz_st_tensor;

typedef struct {
  char *path;
  tz_fmt_map map;
  tz_st_tensor *t;
  int n;
} tz_st_file;

/* Map and validate a safetensors file. */
int tz_st_open(const char *path, tz_st_file *f);
void tz_st_close(tz_st_file *f);
/* The tensor called `name`, or NULL. */
const tz_st_tensor *tz_st_find(const tz_st_file *f, const char *name);
/* Convert a tensor's numel elements to fp32 (F32 copied, F16 / BF16 widened exactly).
 * Errors: any other dtype ("<file>: tensor 'x' has dtype I64; only F32, F16 and BF16 ..."). */
int tz_st_to_f32(const tz_st_file *f, const tz_st_tensor *t, float *dst);

/* One tensor to write: fp32 data of shape[0..ndim). */
typedef struct {
  const char *name;
  int ndim;
  int64_t shape[2];
  const float *data;
} tz_st_out;

/* Write tensors as F32 (atomically: temporary file + rename, core/fileio.h), header padded
 * with spaces to a multiple of 8 bytes, "__metadata__": {"format": "pt"}. */
int tz_st_write(const char *path, const tz_st_out *t, int n);

/* IEEE half → float (exact). Exposed for tests. */
float tz_f16_to_f32(uint16_t h);

#endif
