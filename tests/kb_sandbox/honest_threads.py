# Allowed after the lockdown: threads of its own process (clone with CLONE_THREAD; glibc
# falls back from clone3, which returns ENOSYS), a local (AF_UNIX) socket pair, a signal to
# itself.
# expect: OK
# expect-text: "seccomp": true
import os
import signal
import socket
import threading

import torch


class ModelNew(torch.nn.Module):
    def forward(self, x, z, alpha):
        out = {}
        t = threading.Thread(target=lambda: out.update(y=torch.addcmul(z, x,
                                                                        torch.full_like(x, alpha))))
        t.start()
        t.join()
        a, b = socket.socketpair()
        a.close()
        b.close()
        os.kill(os.getpid(), 0)
        signal.pthread_kill(threading.get_ident(), 0)
        return out["y"]
