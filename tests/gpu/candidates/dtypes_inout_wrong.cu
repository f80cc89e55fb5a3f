/*@kopt
{
  "launches": [{"kernel": "dtypes_bad", "grid": ["cdiv(N,256)"], "block": [256],
                "args": ["a16", "ab", "a64", "ai", "al", "y16", "yb", "y64", "yi", "yl", "z64", "N"]}],
  "includes": ["../problems/dtypes"]
}
*/
// problem: tests/gpu/problems/dtypes
// Adds the input into the in-out tensor twice: in-out tensors are compared after the run (and restored before each run), so this must be WRONG.
#define DTYPES_KERNEL dtypes_bad
#define INOUT_TIMES 2.0
#include "dtypes_body.cuh"
