# Written for the benchmark's shapes, as a coder told to put the sizes in the code would:
# it works in rows of WIDTH = 6144 elements (this test's width) and never handles a
# remainder, so it is right whenever the element count is a multiple of 6144 and leaves
# the tail at zero otherwise. kopt also checks at the problem's check_sizes, odd ones:
# right at the main sizes, wrong only at the check sizes: SHAPE_SPECIFIC.
# expect: SHAPE_SPECIFIC
import torch
import torch.nn as nn

WIDTH = 6144   # = the test's --size width


class ModelNew(nn.Module):
    def forward(self, x, z, alpha):
        out = torch.zeros_like(x)
        n = x.numel() // WIDTH * WIDTH
        if n:
            xr, zr = x.reshape(-1)[:n].view(-1, WIDTH), z.reshape(-1)[:n].view(-1, WIDTH)
            out.view(-1)[:n].view(-1, WIDTH).copy_(torch.add(zr, xr, alpha=alpha))
        return out
