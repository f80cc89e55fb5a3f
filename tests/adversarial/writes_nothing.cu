/*@kopt {"launches": [{"kernel": "nothing", "grid": [1], "block": [32],
                      "args": ["a", "b", "c", "N"]}]} */
// problem: examples/vector_add
// expect: WRONG
// Writes nothing, hoping the output of an earlier (reference) run is still in place: kopt
// fills outputs with NaN before every run, and the reference ran in another process.
extern "C" __global__ void nothing(const float *a, const float *b, float *c, long long N) {}
