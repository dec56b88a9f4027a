/* Libraries loaded on first use (dlopen) instead of at every start.
 *
 * Every library that the program links is mapped and relocated by the dynamic loader before
 * main() runs, whether the command uses it or not: MPI, OpenBLAS and libplot (with their
 * X11, hwloc, libevent and Fortran runtimes) cost ~35 ms of CPU per `tezgah` call on the 2-core
 * VM. So they are loaded only by the commands that use them:
 *   - OpenBLAS (TZ_MATMUL=blas): src/kernels/matmul/blas_load.c, dlopen + dlsym.
 *   - libplot (tezgah plot, train --plot): src/cli/plot_draw.c, dlopen + a table of dlsym'ed
 *     functions.
 *   - MPI (mpirun, train --nproc on the cpu): the module libtezgah_mpi.so
 *     (src/modules/mpi_module.c, linked to libmpi), found with tz_module_find and dlopen'ed
 *     by src/dist/comm_mpi.c: MPI's handles (MPI_COMM_WORLD, MPI_FLOAT) are implementation
 *     objects, so the MPI calls live in code compiled against mpi.h.
 * Not for the wasm build (no dlopen there). */
#ifndef TZ_CORE_DLIB_H
#define TZ_CORE_DLIB_H
#include <stddef.h>

/* Find the module file `name` (e.g. "libtezgah_mpi.so"): $TEZGAH_MODULE_DIR/name when that
 * variable is set (and only there), else beside the executable (/proc/self/exe) or in one of
 * the 5 folders above it (build/tests/test_x finds build/'s) or in lib/tezgah of the prefix
 * above bin/ (a moved install), else in the installed module folder (<libdir>/tezgah,
 * TZ_MODULE_DIR at build time). 0 and the path in out (cap bytes),
 * or -1 with one tz_err() line naming `what`, the file and where it was looked for. */
int tz_module_find(const char *name, const char *what, char *out, size_t cap);

/* dlerror()'s reason without the leading "path: " that glibc puts first (so a message names
 * the path once); "dlopen failed" when there is none. */
const char *tz_dl_why(const char *path);

#endif
