"""An OpenAI-compatible chat endpoint (`POST /v1/chat/completions`) in front of an aac `Engine`, on a
local port: what SkyRL's vLLM servers expose for the policy, for a CPU engine (aac/skyrl/client.py).

A request for `model_name` runs the base model (`adapter=None`; the vLLM engine: the identity adapter),
a request for another name runs the adapter of that name. So the frozen critic reaches the policy's
engine over HTTP and gets the unmodified base, as it does on SkyRL's GPU servers. Non-streaming
chat completions only; a failed generation is answered with HTTP 500 and its reason.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from aac.engines.base import Engine, GenRequest, Sampling


def chat_request(body: dict, model_name: str) -> GenRequest:
    stop = body.get("stop")
    sampling = Sampling(temperature=float(body.get("temperature", 1.0)), top_p=float(body.get("top_p", 1.0)),
                        max_tokens=int(body.get("max_tokens") or body.get("max_completion_tokens") or 256),
                        seed=body.get("seed"), stop=[stop] if isinstance(stop, str) else stop,
                        include_stop=bool(body.get("include_stop_str_in_output", False)))
    model = body.get("model")
    return GenRequest(list(body["messages"]), sampling, adapter=None if model in (None, model_name) else model)


class ChatEndpoint:
    def __init__(self, engine: Engine, model_name: str, host: str = "127.0.0.1", port: int = 0):
        self.engine, self.model_name = engine, model_name
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802  (http.server's name)
                if self.path.rstrip("/") != "/v1/chat/completions":
                    return self._send(404, {"error": {"message": f"no route {self.path}"}})
                try:
                    body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                    request = chat_request(body, endpoint.model_name)
                except (KeyError, TypeError, ValueError) as e:
                    return self._send(400, {"error": {"message": f"bad request: {e}"}})
                result = endpoint.engine.generate([request])[0]
                if result.finish_reason == "error":
                    return self._send(500, {"error": {"message": result.error}})
                self._send(200, {
                    "id": "aac", "object": "chat.completion", "created": 0, "model": body.get("model"),
                    "choices": [{"index": 0, "finish_reason": result.finish_reason,
                                 "message": {"role": "assistant", "content": result.text}}],
                    "usage": {"prompt_tokens": len(result.prompt_ids), "completion_tokens": len(result.token_ids),
                              "total_tokens": len(result.prompt_ids) + len(result.token_ids)}})

            def _send(self, status: int, body: dict) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:  # requests are counted by the engine's stats
                pass

        self.server = ThreadingHTTPServer((host, port), Handler)
        self.server.daemon_threads = True
        self._thread = threading.Thread(target=self.server.serve_forever, name="aac-chat-endpoint", daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
