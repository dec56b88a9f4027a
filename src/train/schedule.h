/* Learning-rate schedule: linear warmup, then cosine decay to a floor.
 * step is 0-based; for step < warmup: lr·(step+1)/warmup; afterwards
 * lr_min + 0.5·(lr − lr_min)·(1 + cos(π·progress)), progress = (step−warmup)/(steps−warmup)
 * clamped to [0, 1], lr_min = lr·min_frac (as llm.c's train_gpt2.cu get_learning_rate). */
#ifndef TZ_TRAIN_SCHEDULE_H
#define TZ_TRAIN_SCHEDULE_H
float tz_lr_at(int step, int steps, int warmup, float lr, float min_frac);
#endif
