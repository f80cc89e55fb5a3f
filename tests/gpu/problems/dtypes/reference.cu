// Test kernel for every dtype: doubles each input (integers also get +1) and adds a64 into
// the in-out z64. The body is shared with the planted wrong variants in tests/gpu/candidates.
#define DTYPES_KERNEL dtypes_ref
#include "dtypes_body.cuh"
