# Forks a helper from forward (which could keep working after the timed window closes).
# expect: TAMPER
# expect-text: clone (a new process)
import os

import torch


class ModelNew(torch.nn.Module):
    def forward(self, x, z, alpha):
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
        return torch.addcmul(z, x, torch.full_like(x, alpha))
