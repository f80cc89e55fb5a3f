# Writes its result into the input z and returns z (saving the output allocation): the
# values are right, but the caller's input is gone. kopt checksums every input after trial
# 0 and after the timed runs and compares with the reference worker's: INPUT_MUTATED.
# expect: INPUT_MUTATED
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x, z, alpha):
        return z.add_(x, alpha=alpha)
