# Computes on the CPU, where CUDA events see nothing, and returns the result there: the
# values are right and the GPU's timed window holds only the copies of the inputs to the
# host. Outputs must be tensors on the worker's CUDA device: WRONG, naming the device.
# expect: WRONG
# expect-text: cpu
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x, z, alpha):
        return z.cpu() + x.cpu() * alpha
