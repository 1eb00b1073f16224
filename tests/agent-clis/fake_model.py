#!/usr/bin/env python3
"""A fake model provider for the real agent CLIs in the tests (docs/agent-clis.md).

Serves, on 127.0.0.1 (or --host, another loopback address) and an ephemeral port, the
request shapes today's CLIs send: OpenAI chat completions (aider through litellm; pi and
kimi, with tools) and responses (Codex CLI), streaming or not; Anthropic messages (Claude
Code, streaming SSE); Gemini generateContent and
streamGenerateContent (Gemini CLI). No real provider is ever reached.

    fake_model.py --mode MODE [--retry-after S] [--log FILE] [--host ADDR] [--then CMD]

prints `port N` on its first stdout line once it listens, then serves until killed.
Modes:
  normal      answers; when the request offers a shell tool, the first answer is a call
              that appends a numbered line to `agent-was-here.txt` in the agent's directory and the answer to
              the tool's result is plain text (aider gets a whole-file edit block)
  rate_limit  429 with `Retry-After: S` and "Please try again in Ss." in the body
  overloaded  529 (Anthropic) or 503 (OpenAI, Gemini), overloaded
  auth        401, invalid API key
  retry_once  the first model request gets `overloaded`'s answer, the rest `normal`'s
  idle        answers in plain text and never calls a tool: the agent exits 0 having
              changed nothing (`stalled_no_progress`)
--output-tokens N: every answer bills N output tokens in its usage (Anthropic `usage` and
`message_delta`, OpenAI `usage`, Gemini `usageMetadata`) in place of the small default: what
the key broker reads as the provider's bill (tests/tests/suite/confinement/hostile_budget.rs).
--then CMD: the shell tool call runs CMD after writing the marker (a probe of what the
agent may do, e.g. read a planted key under confinement).
Connection refused is no server at all: the tests take a port and close it.
Every request is appended to --log as one JSON line (method, path, status, `ts` (Unix time,
seconds), `bytes` (the request body's length), and for a model request `turns`: how many
conversation entries it carried, so a test sees a resumed session's history come back).
--expect-key-env VAR: the key the provider expects is the value of the server's own
environment variable VAR (never an argument: the command line is readable to every
process); a model request without it (in x-api-key, Authorization: Bearer, x-goog-api-key
or ?key=) gets `auth`'s 401. Each logged line then says `key`: "expected", "other" or
"none", and `key_via`: where it came (the key itself is never logged).
"""

import argparse
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MARK_FILE = "agent-was-here.txt"
MARK_TEXT = "written by the agent through the fake model"

STATE = {"model_requests": 0, "idle": False, "then": None, "output_tokens": None}


def billed_output(default):
    """The output tokens an answer bills: --output-tokens, else `default`."""
    return STATE["output_tokens"] if STATE["output_tokens"] is not None else default


def mark_text():
    """The marker line, numbered by the model request that wrote it: every round of a
    serve run changes the tree."""
    return f"{MARK_TEXT} (answer {STATE['model_requests']})"


def shell_line():
    line = f"echo '{mark_text()}' >> {MARK_FILE}"
    if STATE["then"]:
        line += f"; {STATE['then']}"
    return line
LOCK = threading.Lock()


def provider_of(path):
    if "/messages" in path:
        return "anthropic"
    if ":generateContent" in path or ":streamGenerateContent" in path:
        return "gemini"
    if path.rstrip("/").endswith("/responses"):
        return "responses"
    if path.rstrip("/").endswith("/chat/completions"):
        return "chat"
    return None


def error_answer(kind, provider, retry_after):
    """(status, headers, body) of a provider's error of `kind`."""
    headers = {}
    if kind == "rate_limit":
        headers["Retry-After"] = str(retry_after)
        msg = f"Rate limit reached for requests. Please try again in {retry_after}s."
        if provider == "anthropic":
            return 429, headers, {"type": "error", "error": {"type": "rate_limit_error", "message": msg}}
        if provider == "gemini":
            return 429, headers, {"error": {
                "code": 429, "status": "RESOURCE_EXHAUSTED",
                "message": f"Resource has been exhausted (e.g. check quota). Please retry in {retry_after}s.",
                "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": f"{retry_after}s"}]}}
        return 429, headers, {"error": {"message": msg, "type": "requests", "param": None, "code": "rate_limit_exceeded"}}
    if kind == "overloaded":
        if provider == "anthropic":
            return 529, headers, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
        if provider == "gemini":
            return 503, headers, {"error": {"code": 503, "status": "UNAVAILABLE",
                                            "message": "The model is overloaded. Please try again later."}}
        return 503, headers, {"error": {"message": "The server is overloaded or not ready yet.",
                                        "type": "server_error", "param": None, "code": None}}
    # auth
    if provider == "anthropic":
        return 401, headers, {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}
    if provider == "gemini":
        return 401, headers, {"error": {"code": 401, "status": "UNAUTHENTICATED",
                                        "message": "API key not valid. Please pass a valid API key."}}
    return 401, headers, {"error": {"message": "Incorrect API key provided: sk-fake. You can find your API key at https://platform.openai.com/account/api-keys.",
                                    "type": "invalid_request_error", "param": None, "code": "invalid_api_key"}}


# ---- deciding what the model says -------------------------------------------------------

def shell_tool(names):
    """(name, argument builder) of a shell-like tool among `names`, else None (always None
    in mode `idle`)."""
    if STATE["idle"]:
        return None
    line = shell_line()
    builders = {
        "Bash": lambda: {"command": line, "description": "Write the marker file"},
        "run_shell_command": lambda: {"command": line, "description": "Write the marker file"},
        "shell_command": lambda: {"command": line},
        "shell": lambda: {"command": ["bash", "-lc", line]},
        "exec_command": lambda: {"cmd": line},
        "bash": lambda: {"command": line},
        "Shell": lambda: {"command": line},
    }
    for name in builders:
        if name in names:
            return name, builders[name]()
    return None


def anthropic_plan(body):
    tools = [t.get("name") for t in body.get("tools") or []]
    messages = body.get("messages") or []
    last = messages[-1] if messages else {}
    content = last.get("content")
    answered = isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
    tool = None if answered else shell_tool(tools)
    return tool


def responses_plan(body):
    tools = [t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)]
    items = body.get("input") or []
    # As for chat completions: only the last input item says whether this turn's tool call
    # was answered; a resumed session (codex's `exec resume --last`) carries the earlier
    # rounds' tool results, and each new round's prompt still gets its tool call.
    last = items[-1] if isinstance(items, list) and items else {}
    answered = isinstance(last, dict) and last.get("type") in (
        "function_call_output", "custom_tool_call_output")
    return None if answered else shell_tool(tools)


def gemini_plan(body):
    names = []
    for t in body.get("tools") or []:
        for d in t.get("functionDeclarations") or []:
            names.append(d.get("name"))
    contents = body.get("contents") or []
    last = contents[-1] if contents else {}
    answered = any("functionResponse" in p for p in last.get("parts") or [])
    return None if answered else shell_tool(names)


def chat_plan(body):
    """The shell tool call a chat-completions request with tools gets (pi, kimi), else None
    (aider offers no tools: it gets a whole-file edit block)."""
    names = [(t.get("function") or {}).get("name") for t in body.get("tools") or [] if isinstance(t, dict)]
    messages = body.get("messages") or []
    # Only the last message says whether this turn's tool call was answered: a resumed
    # session (pi's --continue, kimi's --session) carries the earlier rounds' tool results,
    # and each new round's prompt still gets its tool call.
    last = messages[-1] if messages else {}
    answered = isinstance(last, dict) and last.get("role") == "tool"
    return None if answered else shell_tool(names)


def aider_text():
    return f"I will create the file.\n\n{MARK_FILE}\n```\n{mark_text()}\n```\n"


# ---- the handler ---------------------------------------------------------------------------

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-model/1"

    def log_message(self, fmt, *args):
        pass

    def record(self, status):
        if self.server.log_path:
            with LOCK, open(self.server.log_path, "a") as f:
                f.write(json.dumps({"method": self.command, "path": self.path, "status": status,
                                    "mode": self.server.mode, "ts": round(time.time(), 3),
                                    "bytes": getattr(self, "body_bytes", 0),
                                    "turns": getattr(self, "turns", None),
                                    "key": getattr(self, "key_seen", None),
                                    "key_via": getattr(self, "key_via", None)}) + "\n")

    def check_key(self):
        """Whether the request carries the expected key (always, without --expect-key-env);
        notes what it carried for the log."""
        expected = self.server.expected_key
        if expected is None:
            return True
        query = self.path.split("?", 1)[1] if "?" in self.path else ""
        offered = [("x-api-key", self.headers.get("x-api-key")),
                   ("x-goog-api-key", self.headers.get("x-goog-api-key"))]
        auth = self.headers.get("Authorization") or ""
        if auth.lower().startswith("bearer "):
            offered.append(("authorization", auth[7:].strip()))
        for pair in query.split("&"):
            if pair.startswith("key="):
                offered.append(("query", pair[4:]))
        offered = [(via, v) for via, v in offered if v]
        good = [via for via, v in offered if v == expected]
        if good:
            self.key_seen, self.key_via = "expected", good[0]
            return True
        self.key_seen = "other" if offered else "none"
        self.key_via = offered[0][0] if offered else None
        return False

    def send_json(self, status, body, headers=None):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)
        self.record(status)

    def start_sse(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        self.record(200)

    def sse(self, data, event=None):
        chunk = ""
        if event:
            chunk += f"event: {event}\n"
        chunk += "data: " + (data if isinstance(data, str) else json.dumps(data)) + "\n\n"
        self.wfile.write(chunk.encode())
        self.wfile.flush()

    def do_GET(self):
        path = self.path.split("?")[0]
        if path.rstrip("/").endswith("/models"):
            self.send_json(200, {"object": "list", "data": [{"id": "fake-model", "object": "model", "owned_by": "fake"}],
                                 "models": []})
        else:
            self.send_json(404, {"error": {"message": "not found", "type": "not_found"}})

    def do_HEAD(self):
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        self.body_bytes = len(raw)
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        path = self.path.split("?")[0]
        provider = provider_of(path)
        if provider is None:
            # Telemetry, event logging and the like: accepted and ignored.
            self.send_json(200, {})
            return
        self.turns = len(body.get("messages") or body.get("input") or body.get("contents") or [])
        if not self.check_key():
            status, headers, err = error_answer("auth", provider, self.server.retry_after)
            self.send_json(status, err, headers)
            return
        with LOCK:
            STATE["model_requests"] += 1
            n = STATE["model_requests"]
        # Ids unique per request: a resumed session carries the earlier rounds' calls.
        self.request_n = n
        mode = self.server.mode
        if mode == "retry_once":
            mode = "overloaded" if n == 1 else "normal"
        if mode not in ("normal", "idle"):
            status, headers, err = error_answer(mode, provider, self.server.retry_after)
            self.send_json(status, err, headers)
            return
        stream = bool(body.get("stream")) or ":streamGenerateContent" in path
        getattr(self, "answer_" + provider)(body, stream)

    # Anthropic messages
    def answer_anthropic(self, body, stream):
        model = body.get("model", "fake-model")
        tool = anthropic_plan(body)
        if tool:
            block = {"type": "tool_use", "id": f"toolu_fake{self.request_n}", "name": tool[0], "input": tool[1]}
            stop = "tool_use"
        else:
            block = {"type": "text", "text": "Done: the marker file is written."}
            stop = "end_turn"
        usage = {"input_tokens": 120, "output_tokens": billed_output(30), "cache_creation_input_tokens": 0,
                 "cache_read_input_tokens": 0}
        message = {"id": f"msg_fake{self.request_n}", "type": "message", "role": "assistant", "model": model,
                   "content": [block], "stop_reason": stop, "stop_sequence": None, "usage": usage}
        if not stream:
            self.send_json(200, message)
            return
        self.start_sse()
        start = dict(message, content=[], stop_reason=None, usage=dict(usage, output_tokens=1))
        self.sse({"type": "message_start", "message": start}, "message_start")
        if block["type"] == "text":
            self.sse({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
                     "content_block_start")
            self.sse({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": block["text"]}},
                     "content_block_delta")
        else:
            self.sse({"type": "content_block_start", "index": 0,
                      "content_block": {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}},
                     "content_block_start")
            self.sse({"type": "content_block_delta", "index": 0,
                      "delta": {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}},
                     "content_block_delta")
        self.sse({"type": "content_block_stop", "index": 0}, "content_block_stop")
        self.sse({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                  "usage": {"output_tokens": usage["output_tokens"]}}, "message_delta")
        self.sse({"type": "message_stop"}, "message_stop")

    # OpenAI responses
    def answer_responses(self, body, stream):
        model = body.get("model", "fake-model")
        tool = responses_plan(body)
        if tool:
            item = {"type": "function_call", "id": f"fc_fake{self.request_n}", "call_id": f"call_fake{self.request_n}", "name": tool[0],
                    "arguments": json.dumps(tool[1]), "status": "completed"}
        else:
            item = {"type": "message", "id": "msg_fake1", "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": "Done: the marker file is written.", "annotations": []}]}
        usage = {"input_tokens": 200, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": billed_output(40),
                 "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 200 + billed_output(40)}
        response = {"id": "resp_fake", "object": "response", "created_at": int(time.time()), "status": "completed",
                    "model": model, "output": [item], "usage": usage}
        if not stream:
            self.send_json(200, response)
            return
        self.start_sse()
        self.sse({"type": "response.created", "sequence_number": 0,
                  "response": dict(response, status="in_progress", output=[], usage=None)}, "response.created")
        self.sse({"type": "response.output_item.added", "sequence_number": 1, "output_index": 0,
                  "item": dict(item, status="in_progress")}, "response.output_item.added")
        if item["type"] == "message":
            self.sse({"type": "response.output_text.delta", "sequence_number": 2, "item_id": item["id"],
                      "output_index": 0, "content_index": 0, "delta": item["content"][0]["text"]},
                     "response.output_text.delta")
        self.sse({"type": "response.output_item.done", "sequence_number": 3, "output_index": 0, "item": item},
                 "response.output_item.done")
        self.sse({"type": "response.completed", "sequence_number": 4, "response": response}, "response.completed")

    # OpenAI chat completions
    def answer_chat(self, body, stream):
        model = body.get("model", "fake-model")
        tool = chat_plan(body)
        if tool:
            message = {"role": "assistant", "content": None, "tool_calls": [
                {"index": 0, "id": "call_fake1", "type": "function",
                 "function": {"name": tool[0], "arguments": json.dumps(tool[1])}}]}
            finish = "tool_calls"
        elif body.get("tools"):
            message = {"role": "assistant", "content": "Done: the marker file is written."}
            finish = "stop"
        else:
            message = {"role": "assistant", "content": aider_text()}
            finish = "stop"
        usage = {"prompt_tokens": 1500, "completion_tokens": billed_output(60), "total_tokens": 1500 + billed_output(60)}
        if not stream:
            if "tool_calls" in message:
                message = dict(message, tool_calls=[{k: v for k, v in c.items() if k != "index"}
                                                    for c in message["tool_calls"]])
            self.send_json(200, {"id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()),
                                 "model": model, "choices": [{"index": 0, "message": message,
                                                              "finish_reason": finish}], "usage": usage})
            return
        self.start_sse()
        base = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": int(time.time()), "model": model}
        self.sse(dict(base, choices=[{"index": 0, "delta": message, "finish_reason": None}]))
        self.sse(dict(base, choices=[{"index": 0, "delta": {}, "finish_reason": finish}], usage=usage))
        self.sse("[DONE]")

    # Gemini generateContent / streamGenerateContent
    def answer_gemini(self, body, stream):
        config = body.get("generationConfig") or {}
        if config.get("responseMimeType") == "application/json" or config.get("responseJsonSchema") or config.get("responseSchema"):
            parts = [{"text": json.dumps({"reasoning": "The model finished its turn.", "next_speaker": "user",
                                          "complexity_reasoning": "simple", "complexity_score": 1,
                                          "model_choice": "flash"})}]
        else:
            tool = gemini_plan(body)
            if tool:
                parts = [{"functionCall": {"name": tool[0], "args": tool[1]}}]
            else:
                parts = [{"text": "Done: the marker file is written."}]
        answer = {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
                  "usageMetadata": {"promptTokenCount": 300, "candidatesTokenCount": billed_output(25),
                                    "totalTokenCount": 300 + billed_output(25)},
                  "modelVersion": "fake-model"}
        if not stream:
            self.send_json(200, answer)
            return
        self.start_sse()
        self.sse(answer)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", default="normal",
                        choices=["normal", "rate_limit", "overloaded", "auth", "retry_once", "idle"])
    parser.add_argument("--retry-after", type=int, default=3)
    parser.add_argument("--log")
    parser.add_argument("--host", default="127.0.0.1",
                        help="the loopback address to listen on (127.0.0.2 for the egress tests)")
    parser.add_argument("--then", help="a shell command the tool call runs after the marker")
    parser.add_argument("--output-tokens", type=int, help="the output tokens every answer bills")
    parser.add_argument("--expect-key-env", help="the variable of this server's environment holding the key to expect")
    args = parser.parse_args()
    STATE["then"] = args.then
    STATE["output_tokens"] = args.output_tokens
    server = ThreadingHTTPServer((args.host, 0), Handler)
    server.daemon_threads = True
    server.mode = args.mode
    STATE["idle"] = args.mode == "idle"
    server.retry_after = args.retry_after
    server.log_path = args.log
    server.expected_key = os.environ.get(args.expect_key_env) if args.expect_key_env else None
    if args.expect_key_env and not server.expected_key:
        sys.exit(f"fake_model.py: {args.expect_key_env} is not set")
    print(f"port {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
