# Turns torch.cuda.synchronize into a no-op from inside forward (its first call, after the
# lockdown): a harness that synchronizes and then reads a clock, or copies outputs, would
# go on before the GPU is done. The worker checks its snapshot of the timing objects
# (torch.cuda.synchronize among them) after every candidate call too, not only after the
# import: TAMPER, named.
# expect: TAMPER
# expect-text: synchronize|timing
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x, z, alpha):
        if not getattr(torch.cuda.synchronize, "_noop", False):
            def synchronize(device=None):
                return None
            synchronize._noop = True
            torch.cuda.synchronize = synchronize
        return z + x * alpha
