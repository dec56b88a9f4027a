/* Load Dawn at run time: one of two supported builds (webgpu_api.h says how their ABIs differ).
 *
 *  - "node": npm webgpu@0.6.2's dist/linux-x64/dawn.node (scripts/setup_webgpu.sh puts it in
 *    .deps/dawn/dawn.node, sha256-checked). A Node addon: it exports only
 *    napi_register_module_v1, and imports 74 Node-API functions. Its wgpu* functions (Dawn's
 *    dawn_proc thunks, which call through a procedure table) are local symbols of the file's
 *    ELF symbol table (.symtab). So: dlopen libtz_napi_stub.so RTLD_GLOBAL (the napi imports
 *    resolve to stubs that abort if ever called), dlopen dawn.node, read its .symtab with
 *    <elf.h>, add the load bias (dlinfo's link map l_addr; checked against dlsym of the one
 *    exported symbol), and install Dawn's native procedures with
 *    dawnProcSetProcs(&dawn::native::GetProcs()). Its GNU build-id must be the pinned one: the
 *    ABI facts hold for that build only.
 *  - "bun": npm bun-webgpu-linux-x64@0.1.7's libwebgpu_wrapper.so (.deps/dawn/), which exports
 *    the C API: dlsym.
 *
 * Search order: $TEZGAH_WEBGPU_LIB (either kind, told apart by whether it exports
 * wgpuCreateInstance); else, from the executable's folder upwards, .deps/dawn/dawn.node and
 * .deps/dawn/libwebgpu_wrapper.so, then ../share/tezgah/dawn/ beside an installed bin/tezgah:
 * dawn.node first where an NVIDIA driver is loaded (it offers ShaderF16 and subgroup matrices
 * there, bun's Dawn withholds ShaderF16), bun's first elsewhere (the lavapipe suite's Dawn;
 * dawn.node prints limit warnings there); TEZGAH_WEBGPU_DAWN=bun|node takes one
 * (docs/WEBGPU.md, "Two Dawns").
 * Every failure is one tz_err line naming the path and what is wrong. */
#define _GNU_SOURCE
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifndef __wasi__ /* the wasm build (scripts/build_wasm.sh) has no dlopen, no ELF files, no passwd */
#include <dlfcn.h>
#include <elf.h>
#include <pwd.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/stat.h>
#endif

#include "backend/backend.h"
#include "backend/webgpu/webgpu_api.h"
#include "core/error.h"

/* Every WGPUFeatureName of each build, copied from tests/fixtures/dawn_abi_facts_<build>.txt's
 * "const WGPUFeatureName_*" lines (tests/test_webgpu_abi.c checks them against the facts, both
 * ways), by value. */
static const tz_wgpu_named features_bun[] = {
    {"DepthClipControl", 0x1}, {"Depth32FloatStencil8", 0x2}, {"TimestampQuery", 0x3}, {"TextureCompressionBC", 0x4},
    {"TextureCompressionBCSliced3D", 0x5}, {"TextureCompressionETC2", 0x6}, {"TextureCompressionASTC", 0x7},
    {"TextureCompressionASTCSliced3D", 0x8}, {"IndirectFirstInstance", 0x9}, {"ShaderF16", 0xa},
    {"RG11B10UfloatRenderable", 0xb}, {"BGRA8UnormStorage", 0xc}, {"Float32Filterable", 0xd},
    {"Float32Blendable", 0xe}, {"ClipDistances", 0xf}, {"DualSourceBlending", 0x10}, {"Subgroups", 0x11},
    {"CoreFeaturesAndLimits", 0x12}, {"DawnInternalUsages", 0x50000}, {"DawnMultiPlanarFormats", 0x50001},
    {"DawnNative", 0x50002}, {"ChromiumExperimentalTimestampQueryInsidePasses", 0x50003},
    {"ImplicitDeviceSynchronization", 0x50004}, {"TransientAttachments", 0x50006},
    {"MSAARenderToSingleSampled", 0x50007}, {"D3D11MultithreadProtected", 0x50008}, {"ANGLETextureSharing", 0x50009},
    {"PixelLocalStorageCoherent", 0x5000a}, {"PixelLocalStorageNonCoherent", 0x5000b},
    {"Unorm16TextureFormats", 0x5000c}, {"Snorm16TextureFormats", 0x5000d},
    {"MultiPlanarFormatExtendedUsages", 0x5000e}, {"MultiPlanarFormatP010", 0x5000f}, {"HostMappedPointer", 0x50010},
    {"MultiPlanarRenderTargets", 0x50011}, {"MultiPlanarFormatNv12a", 0x50012}, {"FramebufferFetch", 0x50013},
    {"BufferMapExtendedUsages", 0x50014}, {"AdapterPropertiesMemoryHeaps", 0x50015},
    {"AdapterPropertiesD3D", 0x50016}, {"AdapterPropertiesVk", 0x50017}, {"R8UnormStorage", 0x50018},
    {"DawnFormatCapabilities", 0x50019}, {"DawnDrmFormatCapabilities", 0x5001a}, {"Norm16TextureFormats", 0x5001b},
    {"MultiPlanarFormatNv16", 0x5001c}, {"MultiPlanarFormatNv24", 0x5001d}, {"MultiPlanarFormatP210", 0x5001e},
    {"MultiPlanarFormatP410", 0x5001f}, {"SharedTextureMemoryVkDedicatedAllocation", 0x50020},
    {"SharedTextureMemoryAHardwareBuffer", 0x50021}, {"SharedTextureMemoryDmaBuf", 0x50022},
    {"SharedTextureMemoryOpaqueFD", 0x50023}, {"SharedTextureMemoryZirconHandle", 0x50024},
    {"SharedTextureMemoryDXGISharedHandle", 0x50025}, {"SharedTextureMemoryD3D11Texture2D", 0x50026},
    {"SharedTextureMemoryIOSurface", 0x50027}, {"SharedTextureMemoryEGLImage", 0x50028},
    {"SharedFenceVkSemaphoreOpaqueFD", 0x50029}, {"SharedFenceSyncFD", 0x5002a},
    {"SharedFenceVkSemaphoreZirconHandle", 0x5002b}, {"SharedFenceDXGISharedHandle", 0x5002c},
    {"SharedFenceMTLSharedEvent", 0x5002d}, {"SharedBufferMemoryD3D12Resource", 0x5002e}, {"StaticSamplers", 0x5002f},
    {"YCbCrVulkanSamplers", 0x50030}, {"ShaderModuleCompilationOptions", 0x50031},
    {"DawnLoadResolveTexture", 0x50032}, {"DawnPartialLoadResolveTexture", 0x50033}, {"MultiDrawIndirect", 0x50034},
    {"DawnTexelCopyBufferRowAlignment", 0x50035}, {"FlexibleTextureViews", 0x50036},
    {"ChromiumExperimentalSubgroupMatrix", 0x50037}, {"SharedFenceEGLSync", 0x50038},
    {"DawnDeviceAllocatorControl", 0x50039}, {"TextureFormatsTier1", 0x5003a},
};
static const tz_wgpu_named features_node[] = {
    {"CoreFeaturesAndLimits", 0x1}, {"DepthClipControl", 0x2}, {"Depth32FloatStencil8", 0x3},
    {"TextureCompressionBC", 0x4}, {"TextureCompressionBCSliced3D", 0x5}, {"TextureCompressionETC2", 0x6},
    {"TextureCompressionASTC", 0x7}, {"TextureCompressionASTCSliced3D", 0x8}, {"TimestampQuery", 0x9},
    {"IndirectFirstInstance", 0xa}, {"ShaderF16", 0xb}, {"RG11B10UfloatRenderable", 0xc}, {"BGRA8UnormStorage", 0xd},
    {"Float32Filterable", 0xe}, {"Float32Blendable", 0xf}, {"ClipDistances", 0x10}, {"DualSourceBlending", 0x11},
    {"Subgroups", 0x12}, {"TextureFormatsTier1", 0x13}, {"TextureFormatsTier2", 0x14}, {"PrimitiveIndex", 0x15},
    {"TextureComponentSwizzle", 0x16}, {"SubgroupSizeControl", 0x17}, {"DawnInternalUsages", 0x50000},
    {"DawnMultiPlanarFormats", 0x50001}, {"DawnNative", 0x50002},
    {"ChromiumExperimentalTimestampQueryInsidePasses", 0x50003}, {"ImplicitDeviceSynchronization", 0x50004},
    {"TransientAttachments", 0x50006}, {"MSAARenderToSingleSampled", 0x50007}, {"D3D11MultithreadProtected", 0x50008},
    {"ANGLETextureSharing", 0x50009}, {"PixelLocalStorageCoherent", 0x5000a},
    {"PixelLocalStorageNonCoherent", 0x5000b}, {"Unorm16TextureFormats", 0x5000c},
    {"MultiPlanarFormatExtendedUsages", 0x5000d}, {"MultiPlanarFormatP010", 0x5000e}, {"HostMappedPointer", 0x5000f},
    {"MultiPlanarRenderTargets", 0x50010}, {"MultiPlanarFormatNv12a", 0x50011}, {"FramebufferFetch", 0x50012},
    {"BufferMapExtendedUsages", 0x50013}, {"AdapterPropertiesMemoryHeaps", 0x50014},
    {"AdapterPropertiesD3D", 0x50015}, {"AdapterPropertiesVk", 0x50016}, {"DawnFormatCapabilities", 0x50017},
    {"DawnDrmFormatCapabilities", 0x50018}, {"MultiPlanarFormatNv16", 0x50019}, {"MultiPlanarFormatNv24", 0x5001a},
    {"MultiPlanarFormatP210", 0x5001b}, {"MultiPlanarFormatP410", 0x5001c},
    {"SharedTextureMemoryVkDedicatedAllocation", 0x5001d}, {"SharedTextureMemoryAHardwareBuffer", 0x5001e},
    {"SharedTextureMemoryDmaBuf", 0x5001f}, {"SharedTextureMemoryOpaqueFD", 0x50020},
    {"SharedTextureMemoryZirconHandle", 0x50021}, {"SharedTextureMemoryDXGISharedHandle", 0x50022},
    {"SharedTextureMemoryD3D11Texture2D", 0x50023}, {"SharedTextureMemoryIOSurface", 0x50024},
    {"SharedTextureMemoryEGLImage", 0x50025}, {"SharedFenceVkSemaphoreOpaqueFD", 0x50026},
    {"SharedFenceSyncFD", 0x50027}, {"SharedFenceVkSemaphoreZirconHandle", 0x50028},
    {"SharedFenceDXGISharedHandle", 0x50029}, {"SharedFenceMTLSharedEvent", 0x5002a},
    {"SharedBufferMemoryD3D12Resource", 0x5002b}, {"StaticSamplers", 0x5002c}, {"YCbCrVulkanSamplers", 0x5002d},
    {"ShaderModuleCompilationOptions", 0x5002e}, {"DawnLoadResolveTexture", 0x5002f},
    {"DawnPartialLoadResolveTexture", 0x50030}, {"MultiDrawIndirect", 0x50031},
    {"DawnTexelCopyBufferRowAlignment", 0x50032}, {"FlexibleTextureViews", 0x50033},
    {"ChromiumExperimentalSubgroupMatrix", 0x50034}, {"SharedFenceEGLSync", 0x50035},
    {"DawnDeviceAllocatorControl", 0x50036}, {"AdapterPropertiesWGPU", 0x50037},
    {"SharedBufferMemoryFromWindowsHandle", 0x50038}, {"SharedTextureMemoryD3D12Resource", 0x50039},
    {"ChromiumExperimentalSamplingResourceTable", 0x5003a}, {"AtomicVec2uMinMax", 0x5003b},
    {"Unorm16FormatsForExternalTexture", 0x5003c}, {"OpaqueYCbCrAndroidForExternalTexture", 0x5003d},
    {"Unorm16Filterable", 0x5003e}, {"RenderPassRenderArea", 0x5003f}, {"AdapterPropertiesDrm", 0x50040},
    {"TextureCompressionUnaligned", 0x50041}, {"DawnAllowUndefinedLoadStoreOp", 0x50042},
    {"BufferMapWriteExtendedUsages", 0x50043},
};
#define N_OF(a) (sizeof a / sizeof a[0])

/* Feature numbers of each build (tests/test_webgpu_abi.c checks them against the facts). */
const tz_wgpu_abi_t tz_wgpu_abi_bun = {
    "bun", "bun-webgpu-linux-x64@0.1.7 libwebgpu_wrapper.so, Dawn 7adb0440d5 (2025-06)",
    0x3, 0xa, 0x11, 0x50037, sizeof(WGPUSubgroupMatrixConfigBun), features_bun, N_OF(features_bun)};
const tz_wgpu_abi_t tz_wgpu_abi_node = {
    "node", "webgpu@0.6.2 dawn.node, Dawn newer than 1e975e28f9 (2026-08-22)", 0x9, 0xb, 0x12,
    0x50034, sizeof(WGPUSubgroupMatrixConfig), features_node, N_OF(features_node)};

const char *tz_wgpu_feature_name(uint32_t v) {
  for (size_t i = 0; i < tz_wgpu_abi->n_feature_names; i++)
    if (tz_wgpu_abi->feature_names[i].value == v) return tz_wgpu_abi->feature_names[i].name;
  return NULL;
}
const tz_wgpu_abi_t *tz_wgpu_abi = &tz_wgpu_abi_bun;

tz_wgpu_fns tz_wgpu;
static void *lib;
#ifndef __wasi__
static void *napi_lib;
#endif
static char lib_path[PATH_MAX];
static char lib_reason[160];

const char *tz_wgpu_lib_path(void) { return lib ? lib_path : NULL; }
const char *tz_wgpu_lib_reason(void) { return lib ? lib_reason : NULL; }

#define TZ_DAWN_NODE_REL ".deps/dawn/dawn.node"
#define TZ_DAWN_BUN_REL ".deps/dawn/libwebgpu_wrapper.so"
#define TZ_DAWN_BUN_MARKER "wgpuAdapterPropertiesSubgroupMatrixConfigsFreeMembers"
#define TZ_DAWN_BUN_ABI_MARKER "wgpuGetInstanceCapabilities" /* gone in newer Dawn */
#define TZ_DAWN_NODE_ABI_MARKER "wgpuGetInstanceLimits"      /* its replacement */
/* GNU build-id of webgpu@0.6.2's linux-x64 dawn.node (sha256 ab18a659...d710) */
#define TZ_DAWN_NODE_BUILD_ID "3693d2a824fcf19121d4e90ae90085e8b19bd36d"
#define TZ_NAPI_STUB "libtz_napi_stub.so"

#ifndef __wasi__
/* Walk up from the executable's folder for `rel` (up to 6 levels); at the prefix above bin/
 * also try `installed` (NULL: none). 0 and the path in out, or -1. */
static int find_up(const char *rel, const char *installed, char *out, size_t cap) {
  char exe[PATH_MAX - 64];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return -1;
  exe[n] = 0;
  for (int up = 0; up < 6; up++) {
    char *slash = strrchr(exe, '/');
    if (!slash) break;
    *slash = 0;
    int k = snprintf(out, cap, "%s/%s", exe, rel);
    if (k > 0 && (size_t)k < cap && access(out, R_OK) == 0) return 0;
    if (up == 1 && installed) { /* exe is now the prefix above bin/ */
      k = snprintf(out, cap, "%s/%s", exe, installed);
      if (k > 0 && (size_t)k < cap && access(out, R_OK) == 0) return 0;
    }
  }
  return -1;
}

/* glibc's dlerror() starts with the path itself ("/x.so: cannot open ..."): name it once */
static const char *dl_why(const char *path) {
  const char *why = dlerror();
  size_t n = strlen(path);
  if (why && !strncmp(why, path, n) && !strncmp(why + n, ": ", 2)) why += n + 2;
  return why ? why : "dlopen failed";
}

/* ---- the ELF symbol table of a file ---- */
typedef struct {
  unsigned char *map;
  size_t size;
  const Elf64_Sym *syms;
  size_t nsyms;
  const char *str;
  size_t strsz;
  const Elf64_Sym *dsyms; /* .dynsym and its strings */
  size_t ndsyms;
  const char *dstr;
  size_t dstrsz;
  char build_id[41];
} elf_file;

static void elf_close(elf_file *e) {
  if (e->map) munmap(e->map, e->size);
  memset(e, 0, sizeof *e);
}

/* Map `path` and find .symtab, its string table and the GNU build-id. 0, or -1 with tz_err. */
static int elf_open(const char *path, elf_file *e) {
  memset(e, 0, sizeof *e);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) {
    if (fd >= 0) close(fd);
    return tz_err("webgpu: cannot read %s for its symbol table", path);
  }
  e->size = (size_t)st.st_size;
  e->map = e->size >= sizeof(Elf64_Ehdr) ? mmap(NULL, e->size, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
  close(fd);
  if (e->map == MAP_FAILED) {
    e->map = NULL;
    return tz_err("webgpu: %s is not an ELF file (too small or unreadable)", path);
  }
  const Elf64_Ehdr *h = (const Elf64_Ehdr *)e->map;
  if (memcmp(h->e_ident, ELFMAG, SELFMAG) || h->e_ident[EI_CLASS] != ELFCLASS64 ||
      h->e_ident[EI_DATA] != ELFDATA2LSB || h->e_machine != EM_X86_64) {
    elf_close(e);
    return tz_err("webgpu: %s is not an x86-64 ELF64 file", path);
  }
  if (h->e_shentsize != sizeof(Elf64_Shdr) || h->e_shoff > e->size ||
      (size_t)h->e_shnum * sizeof(Elf64_Shdr) > e->size - h->e_shoff) {
    elf_close(e);
    return tz_err("webgpu: %s: ELF section headers out of the file", path);
  }
  const Elf64_Shdr *sh = (const Elf64_Shdr *)(e->map + h->e_shoff);
  for (unsigned i = 0; i < h->e_shnum; i++) {
    if (sh[i].sh_offset > e->size || sh[i].sh_size > e->size - sh[i].sh_offset) continue;
    if ((sh[i].sh_type == SHT_SYMTAB || sh[i].sh_type == SHT_DYNSYM) && sh[i].sh_link < h->e_shnum &&
        sh[i].sh_entsize == sizeof(Elf64_Sym)) {
      const Elf64_Shdr *ss = &sh[sh[i].sh_link];
      if (ss->sh_offset > e->size || ss->sh_size > e->size - ss->sh_offset) continue;
      int dyn = sh[i].sh_type == SHT_DYNSYM;
      *(dyn ? &e->dsyms : &e->syms) = (const Elf64_Sym *)(e->map + sh[i].sh_offset);
      *(dyn ? &e->ndsyms : &e->nsyms) = sh[i].sh_size / sizeof(Elf64_Sym);
      *(dyn ? &e->dstr : &e->str) = (const char *)(e->map + ss->sh_offset);
      *(dyn ? &e->dstrsz : &e->strsz) = ss->sh_size;
    } else if (sh[i].sh_type == SHT_NOTE) {
      /* notes: namesz, descsz, type, name (4-aligned), desc (4-aligned) */
      const unsigned char *p = e->map + sh[i].sh_offset, *end = p + sh[i].sh_size;
      while (p + sizeof(Elf64_Nhdr) <= end) {
        const Elf64_Nhdr *nh = (const Elf64_Nhdr *)p;
        size_t nsz = (nh->n_namesz + 3u) & ~3u, dsz = (nh->n_descsz + 3u) & ~3u;
        const unsigned char *name = p + sizeof *nh, *desc = name + nsz;
        if (desc + dsz > end) break;
        if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && !memcmp(name, "GNU", 4) && nh->n_descsz <= 20)
          for (unsigned k = 0; k < nh->n_descsz; k++) snprintf(e->build_id + 2 * k, 3, "%02x", desc[k]);
        p = desc + dsz;
      }
    }
  }
  return 0;
}

/* 1 if the dynamic symbol table defines the global function `name` (an exported C API) */
static int elf_exports(const elf_file *e, const char *name) {
  for (size_t i = 1; i < e->ndsyms; i++) {
    const Elf64_Sym *s = &e->dsyms[i];
    if (s->st_shndx != SHN_UNDEF && s->st_name < e->dstrsz && ELF64_ST_TYPE(s->st_info) == STT_FUNC &&
        ELF64_ST_BIND(s->st_info) != STB_LOCAL && !strcmp(e->dstr + s->st_name, name))
      return 1;
  }
  return 0;
}

/* The symbol table value of the defined function or object `name`, or 0. */
static Elf64_Addr elf_lookup(const elf_file *e, const char *name) {
  for (size_t i = 1; i < e->nsyms; i++) {
    const Elf64_Sym *s = &e->syms[i];
    if (s->st_shndx == SHN_UNDEF || s->st_name >= e->strsz || !s->st_value) continue;
    int t = ELF64_ST_TYPE(s->st_info);
    if (t != STT_FUNC && t != STT_OBJECT) continue;
    if (!strcmp(e->str + s->st_name, name)) return s->st_value;
  }
  return 0;
}

/* Every wgpu* function named in TZ_WGPU_FUNCS, resolved in one pass over the symbol table. */
static const char *const fn_names[] = {
#define TZ_WGPU_NAME(ret, name, args) #name,
    TZ_WGPU_FUNCS(TZ_WGPU_NAME)
#undef TZ_WGPU_NAME
};
#define N_FNS (sizeof fn_names / sizeof fn_names[0])

static int load_napi_stub(void) {
  if (napi_lib) return 0;
  char path[PATH_MAX];
  const char *env = getenv("TEZGAH_NAPI_STUB");
  if (env && *env)
    snprintf(path, sizeof path, "%s", env);
  else if (find_up(TZ_NAPI_STUB, "lib/" TZ_NAPI_STUB, path, sizeof path) != 0 &&
           find_up("lib/" TZ_NAPI_STUB, NULL, path, sizeof path) != 0)
    return tz_err("webgpu: %s not found beside the executable or above it (it is built with "
                  "tezgah; set TEZGAH_NAPI_STUB): needed to load dawn.node without Node", TZ_NAPI_STUB);
  void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
  if (!h) return tz_err("webgpu: cannot load the Node-API stubs %s: %s", path, dl_why(path));
  if (!dlsym(h, "tz_napi_stub_count")) {
    dlclose(h);
    return tz_err("webgpu: %s is not tezgah's Node-API stub library", path);
  }
  napi_lib = h;
  return 0;
}

/* dawn.node: entry points from the ELF symbol table. */
static int load_from_symtab(const char *path, tz_wgpu_fns *f, void **out) {
  elf_file e;
  if (elf_open(path, &e) != 0) return -1;
  if (!e.syms) {
    elf_close(&e);
    return tz_err("webgpu: %s is stripped (no ELF .symtab) and exports no wgpu* functions: "
                  "use the unstripped dawn.node of npm webgpu@0.6.2 (scripts/setup_webgpu.sh)", path);
  }
  if (!elf_lookup(&e, "dawnProcSetProcs") && !elf_lookup(&e, "wgpuCreateInstance")) {
    elf_close(&e);
    return tz_err("webgpu: %s is not a Dawn build (no wgpuCreateInstance in its symbol table)", path);
  }
  const char *unchecked = getenv("TEZGAH_WEBGPU_ABI_UNCHECKED");
  if (strcmp(e.build_id, TZ_DAWN_NODE_BUILD_ID) && !(unchecked && !strcmp(unchecked, "1"))) {
    char id[48];
    snprintf(id, sizeof id, "%s", e.build_id[0] ? e.build_id : "none");
    elf_close(&e);
    return tz_err("webgpu: %s is not the pinned dawn.node of npm webgpu@0.6.2 (build-id %s, want "
                  "%s): its ABI is unchecked (run scripts/setup_webgpu.sh, or "
                  "TEZGAH_WEBGPU_ABI_UNCHECKED=1 to try it)", path, id, TZ_DAWN_NODE_BUILD_ID);
  }
  if (!elf_lookup(&e, TZ_DAWN_NODE_ABI_MARKER)) {
    elf_close(&e);
    return tz_err("webgpu: %s has an ABI other than webgpu@0.6.2's (no %s in its symbol table)", path,
                  TZ_DAWN_NODE_ABI_MARKER);
  }
  Elf64_Addr v[N_FNS];
  memset(v, 0, sizeof v);
  for (size_t i = 1; i < e.nsyms; i++) {
    const Elf64_Sym *s = &e.syms[i];
    if (s->st_shndx == SHN_UNDEF || ELF64_ST_TYPE(s->st_info) != STT_FUNC || s->st_name >= e.strsz) continue;
    const char *nm = e.str + s->st_name;
    if (strncmp(nm, "wgpu", 4)) continue;
    for (size_t k = 0; k < N_FNS; k++)
      if (!v[k] && !strcmp(nm, fn_names[k])) v[k] = s->st_value;
  }
  Elf64_Addr set_procs = elf_lookup(&e, "dawnProcSetProcs");
  Elf64_Addr get_procs = elf_lookup(&e, "_ZN4dawn6native8GetProcsEv"); /* dawn::native::GetProcs() */
  Elf64_Addr reg = elf_lookup(&e, "napi_register_module_v1");
  elf_close(&e);
  for (size_t k = 0; k < N_FNS; k++)
    if (!v[k]) return tz_err("webgpu: %s: no symbol %s in its ELF symbol table", path, fn_names[k]);
  if (!set_procs || !get_procs)
    return tz_err("webgpu: %s: no symbol %s in its ELF symbol table", path,
                  set_procs ? "dawn::native::GetProcs()" : "dawnProcSetProcs");
  if (load_napi_stub() != 0) return -1;
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) return tz_err("webgpu: cannot load Dawn from %s: %s", path, dl_why(path));
  struct link_map *lm = NULL;
  if (dlinfo(h, RTLD_DI_LINKMAP, &lm) != 0 || !lm) {
    dlclose(h);
    return tz_err("webgpu: %s: dlinfo gave no load address", path);
  }
  uintptr_t base = (uintptr_t)lm->l_addr;
  /* the file read is the file mapped: the one exported symbol agrees with the symbol table */
  void *dyn = dlsym(h, "napi_register_module_v1");
  if (reg && dyn && (uintptr_t)dyn != base + reg) {
    dlclose(h);
    return tz_err("webgpu: %s: symbol table and loaded image disagree (napi_register_module_v1 at "
                  "%p, table says %p)", path, dyn, (void *)(base + reg));
  }
  void **slot = (void **)f;
  for (size_t k = 0; k < N_FNS; k++) slot[k] = (void *)(base + v[k]);
  /* the wgpu* thunks call through dawn_proc's table: point it at Dawn's native procedures */
  const void *(*get)(void) = (const void *(*)(void))(base + get_procs);
  void (*set)(const void *) = (void (*)(const void *))(base + set_procs);
  set(get());
  *out = h;
  return 0;
}

/* bun-webgpu: entry points exported. */
static int load_exported(void *h, const char *path, tz_wgpu_fns *f) {
  if (!dlsym(h, TZ_DAWN_BUN_ABI_MARKER) || !dlsym(h, TZ_DAWN_BUN_MARKER))
    return tz_err("webgpu: %s exports Dawn's C API but not bun-webgpu 0.1.7's ABI (no %s): an "
                  "unsupported build", path,
                  dlsym(h, TZ_DAWN_BUN_ABI_MARKER) ? TZ_DAWN_BUN_MARKER : TZ_DAWN_BUN_ABI_MARKER);
  void **slot = (void **)f;
  for (size_t k = 0; k < N_FNS; k++) {
    slot[k] = dlsym(h, fn_names[k]);
    if (!slot[k])
      return tz_err("webgpu: %s is not a compatible Dawn build (no symbol %s; need "
                    "bun-webgpu-linux-x64@0.1.7's libwebgpu_wrapper.so)", path, fn_names[k]);
  }
  return 0;
}

/* Load `path` (either kind, told apart by its dynamic symbol table). 0 or -1 with tz_err. */
static int load_path(const char *path) {
  _Static_assert(sizeof(tz_wgpu_fns) == N_FNS * sizeof(void *), "tz_wgpu_fns is one pointer per function");
  if (access(path, R_OK) != 0) return tz_err("webgpu: cannot load Dawn from %s: no such readable file", path);
  elf_file e;
  if (elf_open(path, &e) != 0) return -1;
  int exported = elf_exports(&e, "wgpuCreateInstance");
  elf_close(&e);
  tz_wgpu_fns f;
  if (exported) {
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) return tz_err("webgpu: cannot load Dawn from %s: %s", path, dl_why(path));
    if (load_exported(h, path, &f) != 0) {
      dlclose(h);
      return -1;
    }
    tz_wgpu = f;
    tz_wgpu_abi = &tz_wgpu_abi_bun;
    lib = h;
    return 0;
  }
  void *h = NULL;
  if (load_from_symtab(path, &f, &h) != 0) return -1;
  tz_wgpu = f;
  tz_wgpu_abi = &tz_wgpu_abi_node;
  lib = h;
  return 0;
}

int tz_wgpu_load(void) {
  if (lib) return 0;
  const char *env = getenv("TEZGAH_WEBGPU_LIB");
  if (env && *env) {
    snprintf(lib_path, sizeof lib_path, "%s", env);
    snprintf(lib_reason, sizeof lib_reason, "TEZGAH_WEBGPU_LIB");
    return load_path(lib_path);
  }
  const char *pick = getenv("TEZGAH_WEBGPU_DAWN");
  int want_node = !pick || !*pick || !strcmp(pick, "node");
  int want_bun = !pick || !*pick || !strcmp(pick, "bun");
  if (!want_node && !want_bun)
    return tz_err("webgpu: TEZGAH_WEBGPU_DAWN=%s: expected node or bun", pick);
  /* Default order: dawn.node first where an NVIDIA driver is loaded (it alone offers ShaderF16
   * and subgroup matrices there); bun's Dawn first elsewhere: it is what the lavapipe suite (CI)
   * has run for sessions, and dawn.node prints two limit warnings on lavapipe's stderr. */
  int nvidia = access("/proc/driver/nvidia/version", R_OK) == 0;
  for (int pass = 0; pass < 2; pass++) {
    int node = (pass == 0) == (nvidia || (pick && !strcmp(pick, "node")));
    if (node && want_node && find_up(TZ_DAWN_NODE_REL, "share/tezgah/dawn/dawn.node", lib_path, sizeof lib_path) == 0) {
      snprintf(lib_reason, sizeof lib_reason, "%s",
               pick && *pick ? "TEZGAH_WEBGPU_DAWN=node"
               : nvidia      ? "default with an NVIDIA driver: dawn.node first (ShaderF16 and subgroup matrices there)"
                             : "default: bun-webgpu's Dawn not found, dawn.node");
      return load_path(lib_path);
    }
    if (!node && want_bun &&
        find_up(TZ_DAWN_BUN_REL, "share/tezgah/dawn/libwebgpu_wrapper.so", lib_path, sizeof lib_path) == 0) {
      snprintf(lib_reason, sizeof lib_reason, "%s",
               pick && *pick ? "TEZGAH_WEBGPU_DAWN=bun"
               : nvidia      ? "default with an NVIDIA driver: dawn.node not found, bun-webgpu's Dawn"
                             : "default without an NVIDIA driver: bun-webgpu's Dawn first "
                               "(TEZGAH_WEBGPU_DAWN=node for dawn.node)");
      return load_path(lib_path);
    }
  }
  return tz_err("webgpu: Dawn library not found: set TEZGAH_WEBGPU_LIB or run "
                "scripts/setup_webgpu.sh (installs %s and %s in the repository)", TZ_DAWN_NODE_REL,
                TZ_DAWN_BUN_REL);
}

#else
/* The wasm build: no shared libraries to load. The WebGPU calls of a wasm build come from the
 * page's JavaScript (scripts/build_wasm.sh --webgpu, TZ_WASM_WEBGPU): wgpu_wasm.c fills the
 * table from web/wgpu_imports.mjs's imports (docs/BROWSER.md); without them `--backend webgpu`
 * is refused with one line and the CPU backend runs. */
int tz_wgpu_load(void) {
  if (lib) return 0;
#ifdef TZ_WASM_WEBGPU
  tz_wgpu_fns f;
  if (tz_wgpu_wasm_load(&f) != 0) return -1;
  tz_wgpu = f;
  tz_wgpu_abi = &tz_wgpu_abi_browser;
  lib = &tz_wgpu;
  snprintf(lib_path, sizeof lib_path, "the page's navigator.gpu (web/wgpu_imports.mjs)");
  snprintf(lib_reason, sizeof lib_reason, "the wasm build's WebGPU bindings");
  return 0;
#else
  return tz_err("webgpu: this wasm build has no WebGPU bindings (the CPU backend runs in it; "
                "scripts/build_wasm.sh --webgpu builds them in)");
#endif
}
#endif

void tz_wgpu_on_adapter(WGPURequestAdapterStatus status, WGPUAdapter adapter, WGPUStringView message, void *u1,
                        void *u2) {
  tz_wgpu_req *r = u1;
  r->status = status;
  r->handle = adapter;
  tz_wgpu_sv_copy(r->msg, sizeof r->msg, message);
}

void tz_wgpu_on_device(WGPURequestDeviceStatus status, WGPUDevice device, WGPUStringView message, void *u1,
                       void *u2) {
  tz_wgpu_req *r = u1;
  r->status = status;
  r->handle = device;
  tz_wgpu_sv_copy(r->msg, sizeof r->msg, message);
}

/* Mesa's llvmpipe (lavapipe; Mesa 25.0.7) keys its shader disk cache on the shader, GALLIVM_PERF
 * and the CPU's features, not on LP_NATIVE_VECTOR_WIDTH, its SIMD width and so its subgroup
 * size: code a process compiled at one width is served to a later process at another, which
 * then runs subgroups of a size other than the one its adapter reports. Where the host derives a
 * constant from that size (the v8 norms' NK, webgpu_ops_elem.c) whole rows come out wrong:
 * after a 4-lane run (LP_NATIVE_VECTOR_WIDTH=128), a default 8-lane run of the same WGSL trained
 * a d_model 128 llama to another loss (session 30's walkthrough; test_webgpu_mesa_cache). So a
 * process that sets the width gets a cache of its own, tezgah-mesa-w<bits> in the folder Mesa
 * would use (XDG_CACHE_HOME when absolute, else $HOME/.cache, else the passwd entry's home's
 * .cache, as Mesa's disk_cache falls back), unless it named one (MESA_SHADER_CACHE_DIR, as
 * ctest's entries do: tests/lavapipe_env.cmake; or the older MESA_GLSL_CACHE_DIR). Only Mesa
 * reads the variable. tz_wgpu_create_instance calls this before the first instance (whose
 * creation loads the Vulkan driver); tz_backend_env calls it earlier, before a caller's threads
 * start (setenv beside another thread's getenv is a data race: backend.h). Idempotent: once
 * set, the variable is the process's choice. */
void tz_backend_webgpu_env(void) {
#ifndef __wasi__ /* (a browser's WebGPU has no Mesa to configure) */
  const char *w = getenv("LP_NATIVE_VECTOR_WIDTH"), *mc = getenv("MESA_SHADER_CACHE_DIR"),
             *mg = getenv("MESA_GLSL_CACHE_DIR");
  if (!w || !*w || strspn(w, "0123456789") != strlen(w) || strlen(w) > 6 || (mc && *mc) || (mg && *mg)) return;
  const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  if (!(home && *home)) {
    const struct passwd *pw = getpwuid(getuid());
    home = pw ? pw->pw_dir : NULL;
  }
  char dir[PATH_MAX];
  int n;
  if (xdg && xdg[0] == '/')
    n = snprintf(dir, sizeof dir, "%s/tezgah-mesa-w%s", xdg, w);
  else if (home && *home)
    n = snprintf(dir, sizeof dir, "%s/.cache/tezgah-mesa-w%s", home, w);
  else
    return; /* no home at all: Mesa has no default cache to share either */
  if (n > 0 && (size_t)n < sizeof dir) setenv("MESA_SHADER_CACHE_DIR", dir, 1);
#endif
}

WGPUInstance tz_wgpu_create_instance(void) {
  tz_backend_webgpu_env();
  if (tz_wgpu_abi == &tz_wgpu_abi_node) {
    static const WGPUInstanceFeatureName feats[] = {WGPUInstanceFeatureName_TimedWaitAny};
    WGPUInstanceLimits il;
    memset(&il, 0, sizeof il);
    il.timedWaitAnyMaxCount = 1;
    WGPUInstanceDescriptor id;
    memset(&id, 0, sizeof id);
    id.requiredFeatureCount = 1;
    id.requiredFeatures = feats;
    id.requiredLimits = &il;
    return tz_wgpu.wgpuCreateInstance(&id);
  }
  WGPUInstanceDescriptorBun id;
  memset(&id, 0, sizeof id);
  id.capabilities.timedWaitAnyEnable = 1;
  id.capabilities.timedWaitAnyMaxCount = 1;
  return tz_wgpu.wgpuCreateInstance((const WGPUInstanceDescriptor *)(const void *)&id);
}

WGPUSubgroupMatrixConfig tz_wgpu_sgmat_config(const WGPUAdapterPropertiesSubgroupMatrixConfigs *p, size_t i) {
  WGPUSubgroupMatrixConfig c;
  memset(&c, 0, sizeof c);
  if (p && p->configs && i < p->configCount)
    memcpy(&c, (const char *)p->configs + i * tz_wgpu_abi->SubgroupMatrixConfig_size,
           tz_wgpu_abi->SubgroupMatrixConfig_size < sizeof c ? tz_wgpu_abi->SubgroupMatrixConfig_size : sizeof c);
  return c;
}

void tz_wgpu_adapter_options(WGPURequestAdapterOptions *o, tz_wgpu_toggles *t, const char *env) {
  const char *te = getenv(env);
  size_t nt = 0;
  memset(t, 0, sizeof *t);
  snprintf(t->buf, sizeof t->buf, "%s", te ? te : "vulkan_enable_f16_on_nvidia,allow_unsafe_apis");
  if (tz_wgpu_abi == &tz_wgpu_abi_node || te)
    for (char *k = strtok(t->buf, ","); k && nt < 8; k = strtok(NULL, ",")) t->names[nt++] = k;
  t->desc.chain.sType = WGPUSType_DawnTogglesDescriptor;
  t->desc.enabledToggleCount = nt;
  t->desc.enabledToggles = t->names;
  memset(o, 0, sizeof *o);
  o->nextInChain = nt ? &t->desc.chain : NULL;
  o->featureLevel = WGPUFeatureLevel_Core;
  o->powerPreference = WGPUPowerPreference_HighPerformance;
  o->backendType = WGPUBackendType_Vulkan;
}
