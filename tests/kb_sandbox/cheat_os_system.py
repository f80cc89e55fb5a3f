# Runs a shell command from forward (it would touch $KOPT_TEST_MARKER).
# expect: TAMPER
# expect-text: stopped by the sandbox (SIGSYS)
import os

import torch


class ModelNew(torch.nn.Module):
    def forward(self, x, z, alpha):
        os.system("touch '%s'" % os.environ.get("KOPT_TEST_MARKER", "/dev/null"))
        return torch.addcmul(z, x, torch.full_like(x, alpha))
