#include "train/schedule.h"

#include <math.h>

float tz_lr_at(int step, int steps, int warmup, float lr, float min_frac) {
  if (step < warmup) return lr * (float)(step + 1) / (float)warmup;
  float lr_min = lr * min_frac;
  if (steps <= warmup) return lr_min;
  double progress = (double)(step - warmup) / (double)(steps - warmup);
  if (progress > 1) progress = 1;
  return (float)(lr_min + 0.5 * (lr - lr_min) * (1.0 + cos(M_PI * progress)));
}
