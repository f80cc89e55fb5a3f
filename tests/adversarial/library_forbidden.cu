/*@kopt {"mode": "host", "libraries": ["cublas"]} */
// problem: tests/adversarial/no_libraries
// expect: FORBIDDEN_LIBRARY
// Host mode: the problem says "allow_libraries": false, and this candidate calls cuBLAS
// anyway (the same code as examples/sgemm/cublas_host.cu). Its answer is right; what gives
// it away is the cuBLAS kernel that CUPTI sees running on the GPU.
#include "../../examples/sgemm/cublas_host.cu"
