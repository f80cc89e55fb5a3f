"""KernelBench-style evaluation of one softmax candidate, for comparing wall time per
candidate with `kopt eval` (issue 2, point 14). It follows KernelBench's harness as
summarized in shared/reference/peers-and-integrity.md: compile the CUDA source with
torch.utils.cpp_extension.load_inline, check 5 trials against the PyTorch reference with
allclose, then time 100 trials with CUDA events after 3 warm-ups, flushing the L2 with a
256 MB write before each timed trial, and report the mean. Run on the GPU machine:
    python3 bench/kernelbench_style.py examples/softmax/fast.cu [build_dir]
"""
import os
import sys
import time

T0 = time.time()
import torch  # noqa: E402
from torch.utils.cpp_extension import load_inline  # noqa: E402

T_IMPORT = time.time()

src_path = sys.argv[1]
build_dir = sys.argv[2] if len(sys.argv) > 2 else None
kernel_src = open(src_path).read()
# the candidate's params (front matter) become macros, as kopt passes them
cuda_src = "#define THREADS 256\n#define CHUNKS 4\n" + kernel_src + r"""
torch::Tensor softmax_forward(torch::Tensor x) {
    auto y = torch::empty_like(x);
    int B = x.size(0), N = x.size(1);
    softmax_fast<<<B, THREADS>>>(x.data_ptr<float>(), y.data_ptr<float>(), B, N);
    return y;
}
"""
cpp_src = "torch::Tensor softmax_forward(torch::Tensor x);"
if build_dir:
    os.makedirs(build_dir, exist_ok=True)
mod = load_inline(name="kb_softmax", cpp_sources=cpp_src, cuda_sources=cuda_src,
                  functions=["softmax_forward"], extra_cuda_cflags=["-O3", "-arch=sm_90a"],
                  build_directory=build_dir, verbose=False)
T_COMPILE = time.time()

B, N = 8192, 4096
ok = True
for trial in range(5):
    torch.manual_seed(42 + trial)
    x = torch.randn(B, N, device="cuda") * 2
    ref = torch.softmax(x, dim=1)
    torch.cuda.synchronize()
    out = mod.softmax_forward(x)
    torch.cuda.synchronize()
    ok &= bool(torch.allclose(out, ref, atol=1e-4, rtol=1e-4))
T_CHECK = time.time()

x = torch.randn(B, N, device="cuda") * 2
for _ in range(3):
    mod.softmax_forward(x)
    torch.cuda.synchronize()
times = []
for _ in range(101):
    torch.cuda.synchronize()
    flush = torch.empty(256 * 1024 * 1024 // 8, dtype=torch.int64, device="cuda")
    flush.fill_(1)
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    mod.softmax_forward(x)
    e.record()
    torch.cuda.synchronize()
    times.append(s.elapsed_time(e))
times = times[1:]
T_TIME = time.time()
mean = sum(times) / len(times)
med = sorted(times)[len(times) // 2]
print(f"kernelbench-style: correct={ok} mean={mean:.4f} ms median={med:.4f} ms "
      f"import={T_IMPORT - T0:.2f}s compile={T_COMPILE - T_IMPORT:.2f}s "
      f"check={T_CHECK - T_COMPILE:.2f}s time={T_TIME - T_CHECK:.2f}s "
      f"total={T_TIME - T0:.2f}s")
