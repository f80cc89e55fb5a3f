/* Internal pieces of evaluation shared between its files. */
#ifndef KOPT_EVAL_INT_H
#define KOPT_EVAL_INT_H

#include "kopt/eval.h"

/* Compare one tensor's output (`got`) with the reference (`want`) into *c. */
void kopt__compare(const kopt_btensor *t, const void *got, const void *want, kopt_check *c);
/* Median, mean, min, max, p10, p90 of n samples. */
void kopt__timing_from_samples(const double *samples, int n, int warmup, kopt_timing *t);
/* Roofline position of a timing for the given work and ceilings. */
void kopt__roofline(kopt_roofline *r, double flops, double bytes, int compute,
                    const kopt_ceilings *c, double median_ms);

#endif
