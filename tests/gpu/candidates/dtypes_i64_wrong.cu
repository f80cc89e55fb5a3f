/*@kopt
{
  "launches": [{"kernel": "dtypes_bad", "grid": ["cdiv(N,256)"], "block": [256],
                "args": ["a16", "ab", "a64", "ai", "al", "y16", "yb", "y64", "yi", "yl", "z64", "N"]}],
  "includes": ["../problems/dtypes"]
}
*/
// problem: tests/gpu/problems/dtypes
// Right everywhere except one i64 element that is off by one: integer outputs are compared exactly, so this must be WRONG.
#define DTYPES_KERNEL dtypes_bad
#define I64_ERROR_AT_MIDDLE 1
#include "dtypes_body.cuh"
