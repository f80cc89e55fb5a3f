// kopt-from: examples/softmax/reference.cu
// kopt-step: 1-fixed
// kopt-test: verdict=OK time=0.70 class=memory
