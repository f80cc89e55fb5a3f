# Correct: captures one CUDA graph per set of input buffers (keyed by their pointers) and
# replays it on the caller's stream. A replay reads whatever the buffers hold now, so a
# pointer-keyed graph recomputes after kopt refreshes the timed buffers in place: unlike a
# pointer-keyed cache of outputs (cache_data_ptr.py), this is honest. Returns the graph's
# static output. OK, with a positive median.
# expect: OK
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.graphs = {}

    def forward(self, x, z, alpha):
        key = (x.data_ptr(), z.data_ptr(), tuple(x.shape), x.stride(), z.stride(),
               float(alpha))
        g = self.graphs.get(key)
        if g is None:
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, capture_error_mode="thread_local"):
                out = torch.add(z, x, alpha=alpha)
            g = self.graphs[key] = (graph, out)
        g[0].replay()
        return g[1]
