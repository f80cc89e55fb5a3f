# Opens a network connection from forward (to report, or fetch, results).
# expect: TAMPER
# expect-text: socket (network)
import socket

import torch


class ModelNew(torch.nn.Module):
    def forward(self, x, z, alpha):
        socket.socket().connect(("127.0.0.1", 9))
        return torch.addcmul(z, x, torch.full_like(x, alpha))
