/* Private declarations shared by the CUDA runtime's C files (backend_cuda*.c). */
#ifndef TZ_CUDA_RT_H
#define TZ_CUDA_RT_H
#include "backend/cuda/cuda_internal.h"

/* Check that a driver and a GPU are there: 0 with the device count and the driver / runtime
 * versions (e.g. 13000), or -1 with tz_err() naming the cause in one line. */
int tzc_probe(int *n_devices, int *driver_version, int *runtime_version);
/* "13.0" from 13000 (static buffer per call site: pass one). */
const char *tzc_version_str(int v, char *buf, size_t n);

/* Memory ops (backend_cuda_mem.c). */
tz_buf *tzc_alloc(tz_backend *be, size_t bytes, const char *what);
void tzc_free(tz_backend *be, tz_buf *b);
void tzc_upload(tz_backend *be, tz_slice dst, const void *src, size_t bytes);
void tzc_download(tz_backend *be, void *dst, tz_slice src, size_t bytes);
void tzc_copy(tz_backend *be, tz_slice dst, tz_slice src, size_t bytes);
void tzc_fill_op(tz_backend *be, tz_slice dst, float value, size_t n, tz_dtype dt);
void tzc_zero_ranges_op(tz_backend *be, tz_buf *buf, const size_t *ranges, int n);
void tzc_download_act(tz_backend *be, float *dst, tz_slice src, size_t n);
void tzc_copy_rows(tz_backend *be, tz_slice dst, size_t dst_stride, tz_slice src, size_t src_stride, int rows,
                   int cols);
void tzc_params_mirror(tz_backend *be, tz_buf *params);
/* be->written: bytes at dst were written outside the op table (NCCL): refresh the bf16 mirror. */
void tzc_written(tz_backend *be, tz_slice dst, size_t bytes);
/* Pinned staging ring (created with the backend; NULL slots fall back to pageable copies). */
void tzc_stage_init(tzc_ctx *c);
void tzc_stage_free(tzc_ctx *c);
void tzc_scratch_free(tz_backend *be);

/* Profiling (backend_cuda_prof.c). */
tzc_prof *tzc_prof_create(void);
void tzc_prof_free(tzc_prof *p);

#endif
