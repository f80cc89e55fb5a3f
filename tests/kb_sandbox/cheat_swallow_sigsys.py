# Installs its own SIGSYS handler, so that a forbidden call fails quietly instead of ending
# the worker, then tries to fork (the fork still does not happen).
# expect: TAMPER
# expect-text: its own handler for signal 31
import os
import signal

import torch


class ModelNew(torch.nn.Module):
    def forward(self, x, z, alpha):
        signal.signal(signal.SIGSYS, lambda *a: None)
        try:
            if os.fork() == 0:
                os._exit(0)
        except OSError:
            pass
        return torch.addcmul(z, x, torch.full_like(x, alpha))
