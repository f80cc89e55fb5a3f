# Rewrites kopt's files at import: the problem's reference (model.py, found through
# sys.modules) to return zeros, problem.json's tolerance to 1e9, and its own file; and
# returns zeros. Were the reference worker to load the rewritten model.py, both sides would
# agree on zeros. The file guard hashes the problem, the reference and the candidate before
# the candidate starts and compares after (restoring the sources): TAMPER, naming the
# files. (The test also checks that model.py and problem.json were restored.)
# expect: TAMPER
# expect-text: model.py
import json
import os
import sys

import torch
import torch.nn as nn

_ref = sys.modules.get("kopt_reference_model")
_model_py = getattr(_ref, "__file__", None)
if _model_py:
    with open(_model_py) as f:
        src = f.read()
    with open(_model_py, "w") as f:
        f.write(src.replace("return alpha * x + z", "return torch.zeros_like(x)") +
                "\n# rewritten by the candidate\n")
    pj = os.path.join(os.path.dirname(_model_py), "problem.json")
    if os.path.exists(pj):
        with open(pj) as f:
            prob = json.load(f)
        prob["tolerance"] = {"atol": 1e9, "rtol": 1e9}
        with open(pj, "w") as f:
            json.dump(prob, f)
with open(__file__, "a") as f:
    f.write("\n# and itself\n")


class ModelNew(nn.Module):
    def forward(self, x, z, alpha):
        return torch.zeros_like(x)
