# Launches its (correct) work on a stream of its own, ordered after the inputs are ready,
# and returns without making the caller's stream wait: the event pair kopt records on its
# stream around the call brackets nothing. Verification is unaffected (the worker
# synchronizes the device after every trial and after the final check call, so the outputs
# it copies are complete and right; trial 0 and its repeat agree), but the timed runs'
# median is about zero, at or below the event overhead, far below the problem's bound:
# SUSPECT. (RACE would need the trials' outputs to be read before the side stream is
# done, which a device-wide synchronization rules out.)
# expect: SUSPECT
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.side = None

    def forward(self, x, z, alpha):
        if self.side is None:
            self.side = torch.cuda.Stream(device=x.device)
        self.side.wait_stream(torch.cuda.current_stream(x.device))
        with torch.cuda.stream(self.side):
            out = torch.add(z, x, alpha=alpha)
        return out   # no current_stream().wait_stream(self.side)
