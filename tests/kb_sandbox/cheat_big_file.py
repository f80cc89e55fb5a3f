# Writes a file past the sandbox's file-size limit (1 MB here) from forward.
# expect: TAMPER
# expect-text: larger than the sandbox allows
# args: --limits fsize=1
import torch


class ModelNew(torch.nn.Module):
    def forward(self, x, z, alpha):
        with open("big.bin", "wb") as f:
            for _ in range(4):
                f.write(b"\0" * (1 << 20))
        return torch.addcmul(z, x, torch.full_like(x, alpha))
