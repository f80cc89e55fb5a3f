# A KernelBench-style problem small enough for the CPU build of PyTorch (tests/cli/
# test_served.sh, test_profile_program.sh): z + 2x over 64 x 96 fp32.
import torch
class Model(torch.nn.Module):
    def forward(self, x, z):
        return z + 2.0 * x
rows = 64
cols = 96
def get_inputs():
    return [torch.randn(rows, cols), torch.randn(rows, cols)]
def get_init_inputs():
    return []
