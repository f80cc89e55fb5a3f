// kopt-from: examples/softmax/fast.cu
// kopt-step: 2
// kopt-test: verdict=OK time=0.40 class=memory
// kopt-plan: vectorize the loads (float4) and keep the row in registers
// kopt-kind: vectorize
// kopt-tool: none
// kopt-gain: 1.6
