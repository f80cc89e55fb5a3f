# Returns a view of an input (z, reshaped to itself) as its output: no work, and the right
# shape, dtype and device. Every element is compared with the reference's z + alpha * x on
# random inputs: WRONG.
# expect: WRONG
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x, z, alpha):
        return z.view(z.shape)
