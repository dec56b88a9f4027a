/* libtz_napi_stub.so: the Node-API (napi_*) functions that npm webgpu@0.6.2's dawn.node imports,
 * so that the dynamic linker can load dawn.node without Node.
 *
 * dawn.node is a Node addon: its JavaScript bindings call Node-API, but Dawn's C API (the
 * wgpu* functions tezgah uses, found in the file's ELF symbol table by dawn_load.c) never does.
 * dawn_load.c dlopens this library with RTLD_GLOBAL before dawn.node, so each import resolves
 * here. None of them may ever run on tezgah's path: each prints one line naming itself and
 * aborts (a silent stub returning "ok" could let a misuse continue with garbage).
 * The list is dawn.node's undefined napi_* dynamic symbols (`nm -D --undefined-only`); a
 * dawn.node needing another one fails to load with dlopen's "undefined symbol: napi_..." line.
 * Arguments are ignored: C lets a caller pass arguments to a function that takes none. */
#include <stdio.h>
#include <stdlib.h>

#define TZ_NAPI_IMPORTS(X)                                                                      \
  X(napi_add_finalizer) X(napi_async_destroy) X(napi_call_function)                             \
  X(napi_close_callback_scope) X(napi_close_escapable_handle_scope) X(napi_close_handle_scope)  \
  X(napi_coerce_to_bool) X(napi_coerce_to_number) X(napi_coerce_to_object)                      \
  X(napi_coerce_to_string) X(napi_create_array_with_length) X(napi_create_double)               \
  X(napi_create_error) X(napi_create_external) X(napi_create_external_arraybuffer)              \
  X(napi_create_function) X(napi_create_object) X(napi_create_promise)                          \
  X(napi_create_range_error) X(napi_create_reference) X(napi_create_string_utf8)                \
  X(napi_create_type_error) X(napi_define_class) X(napi_define_properties)                      \
  X(napi_delete_reference) X(napi_detach_arraybuffer) X(napi_escape_handle)                     \
  X(napi_fatal_error) X(napi_get_and_clear_last_exception) X(napi_get_array_length)             \
  X(napi_get_arraybuffer_info) X(napi_get_boolean) X(napi_get_cb_info)                          \
  X(napi_get_element) X(napi_get_global) X(napi_get_instance_data)                              \
  X(napi_get_last_error_info) X(napi_get_named_property) X(napi_get_new_target)                 \
  X(napi_get_null) X(napi_get_property) X(napi_get_property_names)                              \
  X(napi_get_reference_value) X(napi_get_typedarray_info) X(napi_get_undefined)                 \
  X(napi_get_value_bool) X(napi_get_value_double) X(napi_get_value_external)                    \
  X(napi_get_value_int32) X(napi_get_value_int64) X(napi_get_value_string_utf8)                 \
  X(napi_get_value_uint32) X(napi_has_property) X(napi_instanceof)                              \
  X(napi_is_array) X(napi_is_arraybuffer) X(napi_is_exception_pending)                          \
  X(napi_is_typedarray) X(napi_new_instance) X(napi_open_escapable_handle_scope)                \
  X(napi_open_handle_scope) X(napi_reference_unref) X(napi_reject_deferred)                     \
  X(napi_remove_wrap) X(napi_resolve_deferred) X(napi_run_script)                               \
  X(napi_set_element) X(napi_set_instance_data) X(napi_set_named_property)                      \
  X(napi_set_property) X(napi_throw) X(napi_typeof)                                             \
  X(napi_unwrap) X(napi_wrap)

static void tz_napi_called(const char *name) {
  fprintf(stderr,
          "tezgah: error: webgpu: dawn.node called the Node-API function %s, which tezgah only "
          "stubs (it uses Dawn's C API, never the Node bindings); aborting\n",
          name);
  abort();
}

#define TZ_NAPI_STUB(name)                                                                      \
  __attribute__((visibility("default"))) int name(void);                                      \
  int name(void) {                                                                              \
    tz_napi_called(#name);                                                                      \
    return 1;                                                                                   \
  }
TZ_NAPI_IMPORTS(TZ_NAPI_STUB)

/* For the loader's check that it loaded this file (and the test's list). */
__attribute__((visibility("default"))) int tz_napi_stub_count(void);
int tz_napi_stub_count(void) {
  int n = 0;
#define TZ_NAPI_COUNT(name) n++;
  TZ_NAPI_IMPORTS(TZ_NAPI_COUNT)
  return n;
}
