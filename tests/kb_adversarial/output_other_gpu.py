# Computes on a second GPU (cuda:1), whose work kopt's events on cuda:0 never see, and
# returns the result there. kopt's worker sees only its own GPU (src/eval/pin.c), so cuda:1
# does not exist there: CRASH, saying why. Unpinned (KOPT_PIN_WORKERS=0) the outputs must
# still be on the worker's CUDA device: WRONG, naming the device. Needs two GPUs (skipped
# otherwise).
# expect: CRASH|WRONG
# expect-text: sees only the GPU|cuda:1
# needs: gpus:2
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x, z, alpha):
        return z.to("cuda:1") + x.to("cuda:1") * alpha
