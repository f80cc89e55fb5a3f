# Before the lockdown a candidate may run programs, as load_inline runs ninja and nvcc: its
# __init__ runs one to its end and leaves another running. The lockdown ends the one still
# running (it would run outside the filter) and says so in the report.
# expect: OK
# expect-text: "ended_processes": ["
import subprocess

import torch


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        subprocess.run(["true"], check=True)
        self.helper = subprocess.Popen(["sleep", "300"])

    def forward(self, x, z, alpha):
        return torch.addcmul(z, x, torch.full_like(x, alpha))
