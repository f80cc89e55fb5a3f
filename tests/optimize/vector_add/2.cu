// kopt-from: examples/vector_add/fast.cu
// kopt-step: 2
// kopt-test: verdict=OK time=0.92 class=memory tool=none advice=no micro-tool fired; the kernel is at 95% of the DRAM bound
// kopt-plan: grid-stride loop over one full wave of blocks, UNROLL float4 pairs in flight per thread, streaming loads and stores
// kopt-kind: occupancy
// kopt-tool: memory_latency
// kopt-gain: 1.05
// Scripted stage 2: examples/vector_add/fast.cu.
