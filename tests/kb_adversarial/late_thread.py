# Returns an unwritten output at once and lets a thread of its own write the (right) values
# 2 ms later, on a stream of its own: the work falls outside the timed bracket. The worker
# synchronizes the device before copying the outputs, but the thread has not launched its
# kernel yet, so the copy races with the late write: trial 0 and its repeat on the same
# inputs disagree (RACE). Where both copies happen to see the same unwritten values the
# comparison with the reference catches it instead (WRONG); never OK. (The thread marks the
# output as used by its stream, record_stream, so the allocator never hands the block to
# anything else, kopt's refreshed inputs included, before the late write is done.)
# expect: RACE|WRONG
import threading
import time

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.side = None

    def forward(self, x, z, alpha):
        if self.side is None:
            self.side = torch.cuda.Stream(device=x.device)
        out = torch.empty_like(x)
        side = self.side

        def late():
            time.sleep(0.002)
            with torch.cuda.stream(side):
                torch.add(z, x, alpha=alpha, out=out)
                out.record_stream(side)

        threading.Thread(target=late, daemon=True).start()
        return out
