// kopt-from: examples/softmax/fast.cu
// kopt-step: 3
// kopt-test: verdict=OK time=0.35 class=memory tool=none advice=no micro-tool fired; the kernel is at 92% of the DRAM bound
// kopt-plan: hold the whole row in registers as float4 (16-byte streaming loads and stores), one DRAM read per element
// kopt-kind: vectorize
// kopt-tool: vectorize
// kopt-gain: 1.5
// Scripted stage 3: examples/softmax/fast.cu.
