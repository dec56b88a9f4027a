/* xxHash for the wasm build: Debian's libxxhash-dev ships the whole implementation in
 * xxhash.h (XXH_IMPLEMENTATION); this file compiles it once, in place of libxxhash.so. */
#define XXH_STATIC_LINKING_ONLY
#define XXH_IMPLEMENTATION
#include <xxhash.h>
