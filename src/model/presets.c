/* Named model shapes: the table behind `tezgah train --model NAME` (see presets.h). */
#include <string.h>

#include "model/presets.h"

static const tz_model_preset PRESETS[] = {
    {"gpt2-124m", TZ_ARCH_GPT2, 12, 12, 768, 1024, "GPT-2 small: L12 H12 C768"},
    {"gpt2-350m", TZ_ARCH_GPT2, 24, 16, 1024, 1024, "GPT-2 medium: L24 H16 C1024"},
    {"gpt2-774m", TZ_ARCH_GPT2, 36, 20, 1280, 1024, "GPT-2 large: L36 H20 C1280"},
    {"gpt2-1.5b", TZ_ARCH_GPT2, 48, 25, 1600, 1024, "GPT-2 XL: L48 H25 C1600"},
    {"stories15m", TZ_ARCH_LLAMA, 6, 6, 288, 256, "llama2.c stories15M: L6 H6 C288, context 256"},
    {"stories42m", TZ_ARCH_LLAMA, 8, 8, 512, 1024, "llama2.c stories42M: L8 H8 C512"},
    {"stories110m", TZ_ARCH_LLAMA, 12, 12, 768, 1024, "llama2.c stories110M: L12 H12 C768"},
};

const tz_model_preset *tz_model_presets(int *n) {
  *n = (int)(sizeof PRESETS / sizeof PRESETS[0]);
  return PRESETS;
}

const tz_model_preset *tz_model_preset_find(const char *name) {
  for (size_t i = 0; i < sizeof PRESETS / sizeof PRESETS[0]; i++)
    if (!strcmp(PRESETS[i].name, name)) return &PRESETS[i];
  return NULL;
}
