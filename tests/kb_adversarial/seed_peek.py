# Tells kopt's checked call apart from the timed rounds without patching anything:
# torch.initial_seed() in forward is the seed the worker drew the current inputs with, and
# kopt derives its seeds from one another (trial t of size set p: s + 1000 p + t + 1; the
# timing seed: s + 999; the rounds' refresh seeds: far away). So it computes honestly when
# the seed is within 1000 of the first one it saw at that shape (the trials, the repeat and
# the checked call, whose seed is the first + 998) and returns its last output, doing
# nothing, in every timed round: every compared output is right, and the timed runs hold no
# work. The worker reseeds PyTorch's generator with a hash of the seed after drawing every
# input set (and the rounds' seeds come from the OS), so initial_seed() says nothing: the
# candidate cannot tell the checked call and returns a stale output there: WRONG.
# expect: WRONG
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.first = {}
        self.last = {}

    def forward(self, x, z, alpha):
        key = tuple(x.shape)
        seed = torch.initial_seed()
        first = self.first.setdefault(key, seed)
        if abs(seed - first) <= 1000 or key not in self.last:
            self.last[key] = torch.add(z, x, alpha=alpha)
        return self.last[key]
