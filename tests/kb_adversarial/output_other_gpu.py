# Computes on a second GPU (cuda:1), whose work kopt's events on cuda:0 never see, and
# returns the result there. Outputs must be on the worker's CUDA device: WRONG, naming the
# device. Needs two GPUs (skipped otherwise).
# expect: WRONG
# expect-text: cuda:1
# needs: gpus:2
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x, z, alpha):
        return z.to("cuda:1") + x.to("cuda:1") * alpha
