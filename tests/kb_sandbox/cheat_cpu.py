# Burns CPU in forward past the sandbox's limit (1 s here, counted from the lockdown:
# importing torch before it took longer than that).
# expect: TIMEOUT
# expect-text: CPU time limit
# args: --limits cpu=1
import time

import torch


class ModelNew(torch.nn.Module):
    def forward(self, x, z, alpha):
        t0 = time.process_time()
        while time.process_time() - t0 < 30:
            pass
        return torch.addcmul(z, x, torch.full_like(x, alpha))
