// transpose reference: y[j*M + i] = x[i*N + j], one thread per element.
// Naive: reads are coalesced along a row of x, but each warp's 32 writes land in 32
// different rows of y (stride M floats), so every store touches its own 32-byte sector.

extern "C" __global__ void transpose_ref(const float *x, float *y, int M, int N)
{
    const int j = blockIdx.x * blockDim.x + threadIdx.x;  // column of x
    const int i = blockIdx.y * blockDim.y + threadIdx.y;  // row of x
    if (i < M && j < N)
        y[(long long)j * M + i] = x[(long long)i * N + j];
}
