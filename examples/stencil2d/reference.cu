// stencil2d reference: 5-point Jacobi step with zero boundary, one thread per output.
// Naive: five bounds-checked scalar global loads per output (neighbor reuse is left
// entirely to the L1/L2 caches).

extern "C" __global__ void stencil2d_ref(const float *x, float *y, int H, int W)
{
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    const int i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= H || j >= W)
        return;
    const long long p = (long long)i * W + j;
    const float c = x[p];
    const float n = (i > 0) ? x[p - W] : 0.f;
    const float s = (i + 1 < H) ? x[p + W] : 0.f;
    const float w = (j > 0) ? x[p - 1] : 0.f;
    const float e = (j + 1 < W) ? x[p + 1] : 0.f;
    y[p] = 0.5f * c + 0.125f * ((n + s) + (w + e));
}
