#ifndef SLUICE_ALG_ALG_H
#define SLUICE_ALG_ALG_H
/*
 * The algorithm tables (one file each in core/alg/), for core/algorithm.c
 * only: everything else calls algorithm_get().
 */
#include "core/algorithm.h"

extern const struct alg_ops alg_leaky_bucket;
extern const struct alg_ops alg_sliding_log;
extern const struct alg_ops alg_sliding_counter;
extern const struct alg_ops alg_fixed_window;
extern const struct alg_ops alg_token_bucket;
extern const struct alg_ops alg_redisson;

#endif
