/*
 * What the SASS reader of this module shares with other modules: the test for ptxas's
 * constant moves written as half arithmetic.
 */
#ifndef KOPT_PROFILE_SASS_INT_H
#define KOPT_PROFILE_SASS_INT_H

#include <stddef.h>

/* Whether an HFMA2's operands (the text after its mnemonic, n bytes: "Rd, -RZ, RZ, a, b")
 * only put constants in a register: both factors are RZ, so it adds the constants to zero.
 * ptxas writes constants so (HFMA2.MMA), in FP32-only kernels too: no half arithmetic. */
int kopt__sass_hfma2_is_move(const char *operands, size_t n);

#endif
