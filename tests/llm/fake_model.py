"""A stand-in model for kopt's command backend: reads the request JSON on stdin, answers
with JSON (text and usage) on stdout. --fail: says why on stderr and exits 4."""
import json
import sys

if "--fail" in sys.argv:
    sys.stderr.write("fake model: out of quota\n")
    sys.exit(4)
req = json.load(sys.stdin)
last = [m["content"] for m in req["messages"] if m["role"] == "user"][-1]
text = "fake reply to: " + last
if req.get("system"):
    text += " (system: %s)" % req["system"]
words = sum(len(m["content"].split()) for m in req["messages"])
json.dump({"text": text, "model": "fake-model", "finish_reason": "stop",
           "usage": {"prompt_tokens": words, "completion_tokens": len(text.split())}},
          sys.stdout)
