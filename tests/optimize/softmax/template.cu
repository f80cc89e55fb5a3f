// kopt-from: examples/softmax/tune.cu
// kopt-step: 3t
// kopt-test: verdict=OK time=0.35 tuned=0.33 class=memory
// Scripted templatizer answer: examples/softmax/tune.cu.
