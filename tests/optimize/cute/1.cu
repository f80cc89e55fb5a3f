// kopt-from: examples/softmax/reference.cu
// kopt-step: 1
// kopt-test: verdict=COMPILE_ERROR logfile=@ROOT@/tests/data/cute/broken_cute.nvcc.log
// kopt-fix: 1-fixed.cu
// kopt-plan: hold each row in a CuTe register tensor and reduce it with cute::reduce
// kopt-kind: cute
// kopt-tool: none
// kopt-gain: 1.4
// Scripted stage 1 (first attempt): a CuTe kernel whose compile fails inside the CuTe
// headers (the fake evaluator gives it a real nvcc log, tests/data/cute/).
#include <cute/tensor.hpp>
