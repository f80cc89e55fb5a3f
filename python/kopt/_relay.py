"""The model of kopt.optimize(..., overlap=True): the search runs as one `kopt optimize
--llm command:...` process, and each of its requests reaches the Python model through this
relay: a Unix socket served by threads of the calling process (Relay), and the program the
command backend runs for each request (this file run as a script: the request JSON from its
stdin sent over the socket, the reply printed). Only the standard library when run as a
program, so that it starts fast (python -S -E)."""
import json
import os
import shutil
import socket
import sys
import tempfile
import threading


def prompt_fields(req):
    """(name, role, text) of a request as kopt's manual mode would write it: its name
    ("e1-p1-planner"; from kopt before 2: node and role, "n0-planner"), the prompt, then each
    later turn of the conversation ("Your reply (turn N)", "kopt's answer")."""
    msgs = req.get("messages") or []
    role = req.get("role") or ""
    text = msgs[0].get("content", "") if msgs else ""
    for m in range(1, len(msgs)):
        text += "\n\n---\n\n# %s (turn %d)\n\n%s" % ("Your reply" if m % 2 else "kopt's answer",
                                                   (m + 1) // 2, msgs[m].get("content", ""))
    turn = len(msgs) // 2 + 1
    name = req.get("name") or ("%s-%s" % (req.get("tag") or "request", role) +
                               (".turn%d" % turn if turn > 1 else ""))
    return name, role, text


def _read_all(conn):
    chunks = []
    while True:
        b = conn.recv(65536)
        if not b:
            return b"".join(chunks)
        chunks.append(b)


class Relay:
    """Serves the command backend's requests with `answer(name, role, text) -> str` on a
    thread per request (the search asks a step's requests at once). The first exception the
    model raises is kept (`error`) and answered as the command backend's {"error": ...};
    `on_error` is called once with it (kopt.optimize stops the search there)."""

    def __init__(self, answer, on_error=None):
        self.answer = answer
        self.on_error = on_error
        self.error = None
        self._lock = threading.Lock()
        self._dir = tempfile.mkdtemp(prefix="kopt-relay-")
        self.path = os.path.join(self._dir, "relay.sock")
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.bind(self.path)
        self._sock.listen(64)
        self._thread = threading.Thread(target=self._serve, name="kopt-relay", daemon=True)
        self._thread.start()

    def command(self):
        """The command backend's spec that runs this relay's program."""
        def q(s):
            return "'%s'" % s if " " in s or '"' in s else s
        return "command:%s -S -E %s %s" % (q(sys.executable), q(os.path.abspath(__file__)),
                                          q(self.path))

    def _serve(self):
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._one, args=(conn,), name="kopt-model",
                             daemon=True).start()

    def _one(self, conn):
        try:
            req = json.loads(_read_all(conn).decode("utf-8"))
            name, role, text = prompt_fields(req)
            try:
                out = self.answer(name, role, text)
                if not isinstance(out, str):
                    raise TypeError("the model returned %s, not the reply's text (str)"
                                    % type(out).__name__)
                reply = {"text": out, "finish_reason": "stop", "model": "python"}
            except Exception as e:   # noqa: BLE001 (the model's own error, raised later)
                first = False
                with self._lock:
                    if self.error is None:
                        self.error, first = e, True
                if first and self.on_error:
                    self.on_error(e)
                reply = {"error": "the Python model raised %s: %s" % (type(e).__name__, e)}
            conn.sendall(json.dumps(reply).encode("utf-8"))
        finally:
            conn.close()

    def close(self):
        try:
            try:
                self._sock.shutdown(socket.SHUT_RDWR)   # wakes the accept
            except OSError:
                pass
            self._sock.close()
        finally:
            shutil.rmtree(self._dir, ignore_errors=True)


def main():
    data = sys.stdin.buffer.read()
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sys.argv[1])
    s.sendall(data)
    s.shutdown(socket.SHUT_WR)
    sys.stdout.buffer.write(_read_all(s))
    s.close()


if __name__ == "__main__":
    main()
