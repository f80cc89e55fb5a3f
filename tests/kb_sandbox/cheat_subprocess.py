# Runs a program from forward through subprocess (it would touch $KOPT_TEST_MARKER).
# expect: TAMPER
# expect-text: stopped by the sandbox (SIGSYS)
import os
import subprocess

import torch


class ModelNew(torch.nn.Module):
    def forward(self, x, z, alpha):
        subprocess.run(["touch", os.environ.get("KOPT_TEST_MARKER", "/dev/null")])
        return torch.addcmul(z, x, torch.full_like(x, alpha))
