"""A loopback fake of the two LLM HTTP APIs the elicitation runner calls, scripted per test.

It speaks only ``POST /v1/chat/completions`` (OpenAI, with ``logprobs``/``top_logprobs``) and
``POST /v1/messages`` (Anthropic), on 127.0.0.1 with an ephemeral port, in a daemon thread. The item
is found in the request by a ``[item:ID]`` marker in the question; the options by the ``Options:``
line of the prompt. Per item, a script lists the actions of its successive requests (after the
list is used up, every request gets ``"ok"``):

- ``"ok"``, ``"ok:ANSWER"``, ``"ok:ANSWER:CONF"``: a well-formed JSON reply (default: the first
  option, confidence 0.8);
- ``"malformed"``: a reply with no confidence in it;
- ``"429"``, ``"500"``, ``"400"``, ``"401"``, ``"404"``: that HTTP error;
- ``"slow"``: sleeps ``slow_s`` before answering (for client timeouts);
- ``"text=REPLY"``: a reply whose text is REPLY, verbatim (for pathological replies);
- ``"correct"``, ``"incorrect"``: a judge's verdict, ``{"correct": true}`` or ``false``;
- ``"ptrue:P"``: a P(True) reply, "True" (or "False" when P < 0.5), whose first token's
  top log-probabilities give "True" 0.9 P, "False" 0.9 (1 - P) and "Maybe" 0.1 (so P(True)
  renormalised over True and False is P); ``"ptrue:P:yes"`` spells them " Yes" / " No",
  ``"ptrue:P:split"`` splits each side in two spellings ("True" and " true", "False" and
  "false", half each); ``"ptrue:none"``: no True/False token among the top log-probabilities.

``default`` is the action of a request whose script is used up (``"ok"`` unless told).

Every request waits ``latency`` seconds first (so that concurrent runs overlap). Setting ``down``
makes the server drop every request without an answer (closing the connection, as a server that
went away mid-run); ``dropped`` counts them.
``requests[item]`` counts every request, ``replies[item]`` the 200 replies. The server is bounded:
after ``max_requests`` it answers 400, and it shuts itself down after ``lifetime`` seconds.
"""

from __future__ import annotations

import json
import math
import re
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ITEM_RE = re.compile(r"\[item:([\w.-]+)\]")
OPTIONS_RE = re.compile(r"Options:\s*(.+)")
INPUT_TOKENS = 20


class FakeLLMServer:
    def __init__(
        self,
        script: dict[str, list[str]] | None = None,
        *,
        max_requests: int = 500,
        lifetime: float = 60.0,
        slow_s: float = 1.0,
        latency: float = 0.0,
        default: str = "ok",
    ) -> None:
        self.script = {k: list(v) for k, v in (script or {}).items()}
        self.default = default
        self.max_requests = max_requests
        self.slow_s = slow_s
        self.latency = latency
        self.down = False
        self.dropped = 0
        self.requests: Counter[str] = Counter()
        self.replies: Counter[str] = Counter()
        self.paths: Counter[str] = Counter()
        self.bodies: list[dict[str, Any]] = []
        self.total = 0
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:  # noqa: N802
                if fake.down:
                    with fake._lock:
                        fake.dropped += 1
                    self.close_connection = True
                    return
                n = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(n) or b"{}")
                path = self.path.split("?")[0]
                status, payload = fake._respond(path, body)
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        self._timer = threading.Timer(lifetime, self.stop)
        self._timer.daemon = True
        self._timer.start()
        self._stopped = False

    # the SDKs' base URLs
    @property
    def openai_base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def anthropic_base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
        self._timer.cancel()
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> FakeLLMServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- behaviour ------------------------------------------------------------------------------
    def _respond(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        api = {"/v1/chat/completions": "openai", "/v1/messages": "anthropic"}.get(path)
        if api is None:
            return 404, {"error": {"message": f"no route {path}", "type": "not_found"}}
        text = " ".join(
            m["content"] if isinstance(m["content"], str) else json.dumps(m["content"])
            for m in body.get("messages", [])
        )
        m = ITEM_RE.search(text)
        item = m.group(1) if m else "?"
        om = OPTIONS_RE.search(text)
        options = [o.strip() for o in om.group(1).split(",")] if om else ["A", "B"]
        with self._lock:
            self.total += 1
            self.requests[item] += 1
            self.paths[path] += 1
            self.bodies.append(body)
            over = self.total > self.max_requests
            queue = self.script.get(item)
            action = queue.pop(0) if queue else self.default
        if over:
            return _error(api, 400, "fake server request budget exhausted")
        if self.latency:
            time.sleep(self.latency)
        if action == "slow":
            time.sleep(self.slow_s)
            action = "ok"
        if action.isdigit():
            return _error(api, int(action), f"scripted {action}")
        content: list[dict[str, Any]] | None = None
        if action in ("correct", "incorrect"):
            tokens = ['{"', "correct", '":', " true" if action == "correct" else " false", "}"]
            reply = "".join(tokens)
            answer_at = None
        elif action.startswith("ptrue:"):
            reply, content = _ptrue(action)
            tokens = [reply]
            answer_at = None
        elif action == "malformed":
            reply = "I think it is probably the first one, but I cannot say how sure I am."
            tokens = [reply]
            answer_at = None
        elif action.startswith("text="):
            reply = action[len("text=") :]
            tokens = [reply]
            answer_at = None
        else:
            parts = action.split(":")
            answer = parts[1] if len(parts) > 1 else options[0]
            conf = parts[2] if len(parts) > 2 else "0.8"
            tokens = ['{"', "answer", '":', ' "', answer, '",', ' "', "confidence", '":', " "]
            tokens += [conf, "}"]
            answer_at = 4
            reply = "".join(tokens)
        with self._lock:
            self.replies[item] += 1
        out_tokens = len(tokens)
        if api == "anthropic":
            return 200, {
                "id": f"msg_{self.total}",
                "type": "message",
                "role": "assistant",
                "model": body.get("model", "fake"),
                "content": [{"type": "text", "text": reply}],
                "stop_reason": "end_turn",
                "stop_sequence": None,
                "usage": {"input_tokens": INPUT_TOKENS, "output_tokens": out_tokens},
            }
        choice: dict[str, Any] = {
            "index": 0,
            "message": {"role": "assistant", "content": reply},
            "finish_reason": "stop",
            "logprobs": None,
        }
        if body.get("logprobs"):
            if content is None:
                content = _logprobs(tokens, answer_at, options)
            choice["logprobs"] = {"content": content, "refusal": None}
        return 200, {
            "id": f"chatcmpl-{self.total}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "fake"),
            "choices": [choice],
            "usage": {
                "prompt_tokens": INPUT_TOKENS,
                "completion_tokens": out_tokens,
                "total_tokens": INPUT_TOKENS + out_tokens,
            },
        }


def _tok(t: str, lp: float) -> dict[str, Any]:
    return {"token": t, "logprob": lp, "bytes": list(t.encode())}


def _logprobs(tokens: list[str], answer_at: int | None, options: list[str]) -> list[dict[str, Any]]:
    """At the answer token: the answer 0.6, the other options 0.3 shared, a non-option 0.1; so
    the renormalised probability of the answer is 0.6 / 0.9 = 2/3."""
    out = []
    for i, t in enumerate(tokens):
        if i == answer_at:
            others = [o for o in options if o != t]
            top = [_tok(t, math.log(0.6))]
            top += [_tok(o, math.log(0.3 / len(others))) for o in others]
            top.append(_tok("I", math.log(0.1)))
            out.append({**_tok(t, math.log(0.6)), "top_logprobs": top})
        else:
            out.append({**_tok(t, 0.0), "top_logprobs": [_tok(t, 0.0)]})
    return out


def _ptrue(action: str) -> tuple[str, list[dict[str, Any]]]:
    """The reply and the log-probabilities of a scripted P(True) action (see the module)."""
    parts = action.split(":")
    if parts[1] == "none":
        top = [_tok("Maybe", math.log(0.7)), _tok("I", math.log(0.3))]
        return "Maybe", [{**_tok("Maybe", math.log(0.7)), "top_logprobs": top}]
    p = float(parts[1])
    spell = parts[2] if len(parts) > 2 else ""
    yes, no = ((" Yes",), (" No",)) if spell == "yes" else (("True",), ("False",))
    if spell == "split":
        yes, no = ("True", " true"), ("False", "false")
    masses = [(t, 0.9 * p / len(yes)) for t in yes] + [(t, 0.9 * (1 - p) / len(no)) for t in no]
    top = [_tok(t, math.log(m)) for t, m in masses if m > 0] + [_tok("Maybe", math.log(0.1))]
    first = max(top, key=lambda c: c["logprob"])
    return first["token"], [{**first, "top_logprobs": top}]


def _error(api: str, status: int, message: str) -> tuple[int, dict[str, Any]]:
    if api == "anthropic":
        kind = {429: "rate_limit_error", 400: "invalid_request_error"}.get(status, "api_error")
        return status, {"type": "error", "error": {"type": kind, "message": message}}
    return status, {"error": {"message": message, "type": "fake_error", "code": str(status)}}
