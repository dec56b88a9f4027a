/* Shared by the format readers/writers (src/formats): file mapping and the tensor-order
 * table that maps a foreign file's order onto our layout. Internal. */
#ifndef TZ_FORMATS_FMT_UTIL_H
#define TZ_FORMATS_FMT_UTIL_H
#include <stddef.h>
#include <stdint.h>

#include "model/layout.h"

/* A read-only mapping of a whole file. */
typedef struct {
  const unsigned char *data;
  size_t size;
} tz_fmt_map;

/* Map `path` (an empty file maps to data == NULL, size 0). Errors name the path. */
int tz_fmt_map_open(const char *path, tz_fmt_map *m);
void tz_fmt_map_close(tz_fmt_map *m);

/* One run of a foreign file's tensor sequence: our tensor `name` (a printf pattern with %d
 * for the layer when per_layer, repeated for l = 0..L-1), or, with name == NULL, `skip`
 * elements of the file that we do not keep (llama2.c's legacy RoPE tables). */
typedef struct {
  const char *name;
  int per_layer;
  size_t skip;
} tz_fmt_entry;

/* Elements a foreign file holds for this order (our tensors' sizes plus skips). */
size_t tz_fmt_count(const tz_layout *lay, int L, const tz_fmt_entry *e, int n);
/* Copy between the foreign order and ours. to_foreign = 0: foreign → ours; 1: ours →
 * foreign. Foreign elements are fp32, or bf16 when bf16 != 0 (rounded to nearest even when
 * writing). A name missing from the layout is a bug (TZ_ASSERT). */
void tz_fmt_permute(const tz_layout *lay, int L, const tz_fmt_entry *e, int n, float *ours,
                    void *foreign, int bf16, int to_foreign);

#endif
