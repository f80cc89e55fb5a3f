/*
 * kopt/proc.h: run a child program and capture its output (compilers, ncu).
 * The output is owned by the caller (free()).
 */
#ifndef KOPT_PROC_H
#define KOPT_PROC_H

#include "kopt/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Run argv[0] (searched on PATH) with stdout and stderr captured together. *exit_code is
 * the exit status, or 128 + signal. A timeout (seconds, 0 = none) kills the child and
 * returns KOPT_E_TIMEOUT. */
kopt_status kopt_proc_run(kopt_ctx *ctx, const char *const *argv, double timeout_s,
                          int *exit_code, char **output);

/* Find a program: $<env_var> (a file, or a folder holding it) when set, then PATH, then
 * the CUDA toolkit's bin folders (/usr/local/cuda/bin, $CUDA_HOME/bin). Returns a
 * malloc'd path, or NULL when not found. */
char *kopt_find_program(const char *env_var, const char *name);

/* The path of the running executable. Borrowed. */
const char *kopt_self_exe(void);
/* The path of libkopt.so when the running program uses the shared library; NULL when
 * libkopt is linked into the program (libkopt.a). Borrowed. */
const char *kopt_self_lib(void);

#ifdef __cplusplus
}
#endif
#endif
