"""A fault-injecting LLM server on the loopback, for kopt's LLM tests.

It speaks just enough of the OpenAI Chat Completions and Anthropic Messages APIs to answer,
and misbehaves on demand: the first path segment names the scenario, so a client whose base
URL is http://127.0.0.1:PORT/<scenario>/v1 gets that behaviour (counters are per scenario:
"500-once" fails the first request only). Every request is logged (path, headers, body) and
GET /_log returns the log as JSON. Run alone: python3 fault_server.py  (prints the port).
"""
import json
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def openai_reply(text, finish="stop", model="fault-model", prompt=11, completion=5, cached=0):
    return {
        "id": "chatcmpl-fault", "object": "chat.completion", "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                     "finish_reason": finish}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                  "total_tokens": prompt + completion,
                  "prompt_tokens_details": {"cached_tokens": cached}},
    }


def anthropic_reply(text, stop="end_turn"):
    return {
        "id": "msg_fault", "type": "message", "role": "assistant", "model": "claude-fault",
        "content": [{"type": "text", "text": text}], "stop_reason": stop,
        "usage": {"input_tokens": 7, "output_tokens": 3, "cache_read_input_tokens": 4},
    }


def openai_error(message, etype="invalid_request_error"):
    return {"error": {"message": message, "type": etype, "code": None}}


def anthropic_error(etype, message):
    return {"type": "error", "error": {"type": etype, "message": message}}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):          # quiet
        pass

    def send_json(self, status, obj, headers=None):
        body = json.dumps(obj).encode()
        self.send_raw(status, body, headers)

    def send_raw(self, status, body, headers=None):
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path == "/_log":
            with self.server.lock:
                self.send_json(200, self.server.log)
        elif self.path.endswith("/models"):
            self.send_json(200, {"object": "list", "data": [{"id": "fault-model"}]})
        else:
            self.send_json(404, openai_error("no such path"))

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n)
        scenario = self.path.strip("/").split("/")[0]
        with self.server.lock:
            count = self.server.counts.get(scenario, 0)
            self.server.counts[scenario] = count + 1
            self.server.log.append({"path": self.path, "scenario": scenario,
                                    "headers": dict(self.headers.items()),
                                    "body": raw.decode("utf-8", "replace")})
        try:
            req = json.loads(raw)
        except ValueError:
            return self.send_json(400, openai_error("request is not JSON"))
        self.answer(scenario, count, req)

    def answer(self, sc, count, req):
        words = " ".join(m.get("content", "") for m in req.get("messages", [])
                         if isinstance(m.get("content"), str))
        if sc == "ok":
            return self.send_json(200, openai_reply("echo: " + words[:200]))
        if sc == "429-once":
            if count == 0:
                return self.send_json(429, openai_error("Rate limit reached", "rate_limit"),
                                      {"Retry-After": "1"})
            return self.send_json(200, openai_reply("after the rate limit"))
        if sc == "429-long":
            return self.send_json(429, openai_error("Rate limit reached", "rate_limit"),
                                  {"Retry-After": "120"})
        if sc == "500-once":
            if count == 0:
                return self.send_json(500, openai_error("The server had an error", "server_error"))
            return self.send_json(200, openai_reply("after the 500"))
        if sc == "503-always":
            return self.send_json(503, openai_error("Service unavailable", "server_error"))
        if sc == "stall":
            time.sleep(4)
            return self.send_json(200, openai_reply("too late"))
        if sc == "stall-once":
            if count == 0:
                time.sleep(4)
            return self.send_json(200, openai_reply("after the stall"))
        if sc == "slow":
            time.sleep(1)
            return self.send_json(200, openai_reply("slow answer"))
        if sc == "truncated":
            body = json.dumps(openai_reply("x" * 500)).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body[: len(body) // 3])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if sc == "reset":
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if sc == "invalid-json":
            return self.send_raw(200, b'{"choices": [{"message": {"content": "oops"')
        if sc == "html":
            return self.send_raw(200, b"<html><body>Welcome to nginx</body></html>")
        if sc == "length":
            return self.send_json(200, openai_reply("__global__ void partial(", "length",
                                                    completion=int(req.get("max_tokens") or 0)))
        if sc == "refusal":
            reply = openai_reply(None)
            reply["choices"][0]["message"]["refusal"] = "I cannot help with that."
            return self.send_json(200, reply)
        if sc == "empty-choices":
            reply = openai_reply("x")
            reply["choices"] = []
            return self.send_json(200, reply)
        if sc == "bad-utf8":
            return self.send_raw(200, json.dumps(openai_reply("BADBYTES")).encode()
                                 .replace(b"BADBYTES", b"bad \xff\xfe bytes"))
        if sc == "huge":
            return self.send_json(200, openai_reply("y" * (9 << 20)))
        if sc == "401":
            # like OpenAI, quote (part of) the key back: kopt must never show it
            auth = self.headers.get("Authorization", "")
            return self.send_json(401, openai_error("Incorrect API key provided: "
                                                    + auth.replace("Bearer ", "")))
        if sc == "400":
            return self.send_json(400, openai_error("max_tokens is too large"))
        if sc.startswith("anthropic"):
            if not self.headers.get("x-api-key") or not self.headers.get("anthropic-version"):
                return self.send_json(400, anthropic_error("invalid_request_error",
                                                           "missing x-api-key or version"))
            if sc == "anthropic-ok":
                return self.send_json(200, anthropic_reply("claude says: " + words[:100]))
            if sc == "anthropic-529":
                return self.send_json(529, anthropic_error("overloaded_error", "Overloaded"))
            if sc == "anthropic-401":
                return self.send_json(401, anthropic_error("authentication_error",
                                                           "invalid x-api-key"))
            if sc == "anthropic-max":
                return self.send_json(200, anthropic_reply("cut", "max_tokens"))
        return self.send_json(404, openai_error("unknown scenario " + sc))


class Server(ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        pass                               # clients that gave up (timeouts) are expected


def start():
    """Start the server on a free loopback port in a thread; returns (server, port)."""
    srv = Server(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    srv.lock = threading.Lock()
    srv.counts = {}
    srv.log = []
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv, srv.server_address[1]


if __name__ == "__main__":
    server, port = start()
    print(port, flush=True)
    try:
        time.sleep(float(sys.argv[1]) if len(sys.argv) > 1 else 600)   # bounded lifetime
    finally:
        server.shutdown()
