# Hard-codes the benchmark shape in a reshape: right at the main sizes, an error at the
# check sizes (another shape): SHAPE_SPECIFIC, not CRASH (the main sizes passed first).
# (8192 x 6144: the sizes tests/gpu/test_kb_adversarial.sh runs at)
# expect: SHAPE_SPECIFIC
import torch, torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, x, z, alpha):
        return (alpha * x.reshape(8192, 6144) + z.reshape(8192, 6144))
