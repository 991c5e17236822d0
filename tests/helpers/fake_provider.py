"""A scripted fake AI provider: plain asyncio HTTP/1.1 on 127.0.0.1, plus SSE body builders.

The server runs its own event loop in a background thread, so sync tests, async tests (on
any loop) and other processes (through `.url`) can all talk to it:

    with FakeProviderServer() as server:
        server.script([Reply.sse(anthropic_sse(text="Hi")), Reply.status(429, "slow down")])
        ... point a provider at server.url ...
        server.requests[0].body["model"]

Each incoming request takes the next scripted reply; with none left the server answers 500
with a body saying so, which makes an unscripted request visible in the test's events.
Builders (`anthropic_sse`, `openai_sse`) write bodies in the providers' documented event
shapes so tests can script "text, then tool call X with input Y" without hand-written SSE.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

STREAMS = Path(__file__).resolve().parent.parent / "fixtures" / "streams"
"""Recorded SSE bodies (`anthropic_text.sse`, `openai_tool.sse`, ...)."""

TEST_MODEL = "test-model-1"


def stream_fixture(name: str) -> bytes:
    """The bytes of one recorded stream under `tests/fixtures/streams/`."""
    return (STREAMS / name).read_bytes()


@dataclass(frozen=True)
class Reply:
    """One scripted HTTP answer.

    `splits` are byte offsets into `body` where the body is cut into separate writes (each
    its own HTTP chunk, `delay_s` apart), so frames can arrive split mid-line or mid-UTF-8.
    `drop_after` closes the connection abruptly after that many body bytes. `echo_auth`
    appends the credential the client sent to the body (a provider echoing a bad key).
    `stall` keeps the connection open after the body until the client goes away.
    """

    status: int = 200
    body: bytes = b""
    headers: tuple[tuple[str, str], ...] = ()
    splits: tuple[int, ...] = ()
    delay_s: float = 0.0
    drop_after: int | None = None
    echo_auth: bool = False
    stall: bool = False

    @classmethod
    def sse(
        cls,
        body: bytes,
        *,
        splits: Iterable[int] = (),
        delay_s: float = 0.0,
        drop_after: int | None = None,
        stall: bool = False,
    ) -> Reply:
        return cls(
            status=200,
            body=body,
            headers=(("content-type", "text/event-stream"),),
            splits=tuple(sorted(set(splits))),
            delay_s=delay_s,
            drop_after=drop_after,
            stall=stall,
        )

    @classmethod
    def status_reply(
        cls,
        status: int,
        body: str | bytes | dict[str, Any] = b"",
        *,
        headers: dict[str, str] | None = None,
        echo_auth: bool = False,
    ) -> Reply:
        if isinstance(body, dict):
            data = json.dumps(body).encode()
            kind = "application/json"
        else:
            data = body.encode() if isinstance(body, str) else body
            kind = "application/json" if data.startswith(b"{") else "text/plain"
        return cls(
            status=status,
            body=data,
            headers=(("content-type", kind), *((headers or {}).items())),
            echo_auth=echo_auth,
        )

    @classmethod
    def redirect(cls, location: str, status: int = 307) -> Reply:
        return cls(status=status, body=b"", headers=(("location", location),))


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    """Lower-cased header names."""
    body: Any
    """The request body parsed as JSON (or the raw text when it is not JSON)."""
    raw_body: bytes
    at: float = 0.0
    """`time.monotonic()` when the request had arrived in full."""


@dataclass
class _State:
    script: list[Reply] = field(default_factory=list)
    requests: list[RecordedRequest] = field(default_factory=list)
    hangups: int = 0
    on_request: Callable[[RecordedRequest], None] | None = None


_REASONS = {
    200: "OK",
    301: "Moved Permanently",
    302: "Found",
    307: "Temporary Redirect",
    308: "Permanent Redirect",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    529: "Overloaded",
}


class FakeProviderServer:
    """Scripted HTTP/1.1 server on 127.0.0.1 with a random port, in a background thread."""

    def __init__(self) -> None:
        self._state = _State()
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.Server | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._port = 0
        self._writers: set[asyncio.StreamWriter] = set()

    # lifecycle -----------------------------------------------------------------------------

    def start(self) -> FakeProviderServer:
        self._thread = threading.Thread(target=self._run, name="fake-provider", daemon=True)
        self._thread.start()
        if not self._ready.wait(5):
            raise RuntimeError("fake provider server did not start")
        return self

    def stop(self) -> None:
        loop = self._loop
        if loop is None:
            return
        fut = asyncio.run_coroutine_threadsafe(self._shutdown(), loop)
        with contextlib.suppress(Exception):
            fut.result(5)
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(5)
        self._loop = None

    def __enter__(self) -> FakeProviderServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """Base URL, e.g. `http://127.0.0.1:54321` (no trailing slash)."""
        return f"http://127.0.0.1:{self._port}"

    # scripting -----------------------------------------------------------------------------

    def script(self, replies: Sequence[Reply]) -> None:
        """Replace the queue of replies and forget recorded requests."""
        with self._lock:
            self._state.script = list(replies)
            self._state.requests = []
            self._state.hangups = 0
            self._state.on_request = None

    def add(self, *replies: Reply) -> None:
        with self._lock:
            self._state.script.extend(replies)

    def on_request(self, callback: Callable[[RecordedRequest], None] | None) -> None:
        """Call `callback(request)` when each request has arrived, before it is answered (a
        test acts "while the model answers"); `script` clears it."""
        with self._lock:
            self._state.on_request = callback

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._state.requests)

    @property
    def hangups(self) -> int:
        """How many stalled replies ended because the client closed the connection."""
        with self._lock:
            return self._state.hangups

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self._state.script)

    # server internals ----------------------------------------------------------------------

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        asyncio.set_event_loop(loop)
        server = loop.run_until_complete(asyncio.start_server(self._handle, "127.0.0.1", 0))
        self._server = server
        self._port = server.sockets[0].getsockname()[1]
        self._ready.set()
        try:
            loop.run_forever()
        finally:
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    async def _shutdown(self) -> None:
        if self._server is not None:
            self._server.close()
        for writer in list(self._writers):
            writer.close()
        if self._server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2)
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        sock = writer.get_extra_info("socket")
        if sock is not None:
            import socket

            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            while True:
                request = await self._read_request(reader)
                if request is None:
                    return
                with self._lock:
                    self._state.requests.append(request)
                    reply = self._state.script.pop(0) if self._state.script else None
                    hook = self._state.on_request
                if hook is not None:
                    hook(request)
                if reply is None:
                    reply = Reply.status_reply(
                        500, {"error": {"type": "test_error", "message": "no scripted reply left"}}
                    )
                keep_open = await self._write_reply(writer, reader, request, reply)
                if not keep_open:
                    return
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        except asyncio.CancelledError:
            # Shutting down with a reply still being written (a client killed mid-stream). A
            # handler task that ends cancelled makes asyncio's stream callback log an error.
            return
        finally:
            self._writers.discard(writer)
            with contextlib.suppress(Exception):
                writer.close()

    @staticmethod
    async def _read_request(reader: asyncio.StreamReader) -> RecordedRequest | None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            return None
        lines = head.decode("latin-1").split("\r\n")
        method, path, _ = lines[0].split(" ", 2)
        headers: dict[str, str] = {}
        for line in lines[1:]:
            if ":" in line:
                name, value = line.split(":", 1)
                headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0") or 0)
        raw = await reader.readexactly(length) if length else b""
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        return RecordedRequest(method=method, path=path, headers=headers, body=body, raw_body=raw,
                               at=time.monotonic())

    async def _write_reply(
        self,
        writer: asyncio.StreamWriter,
        reader: asyncio.StreamReader,
        request: RecordedRequest,
        reply: Reply,
    ) -> bool:
        body = reply.body
        if reply.echo_auth:
            credential = request.headers.get("x-api-key") or request.headers.get(
                "authorization", ""
            )
            credential = credential.removeprefix("Bearer ").strip()
            body = body + f" (key received: {credential})".encode()
        reason = _REASONS.get(reply.status, "Status")
        head = [f"HTTP/1.1 {reply.status} {reason}"]
        head.extend(f"{name}: {value}" for name, value in reply.headers)
        if reply.status == 200:
            head.append("transfer-encoding: chunked")
        else:
            head.append(f"content-length: {len(body)}")
        head.append("connection: close")
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))
        await writer.drain()
        if reply.status != 200:
            writer.write(body)
            await writer.drain()
            return False
        pieces: list[bytes] = []
        last = 0
        for cut in (*reply.splits, len(body)):
            if last < cut <= len(body):
                pieces.append(body[last:cut])
                last = cut
        sent = 0
        for index, piece in enumerate(pieces):
            if reply.drop_after is not None and sent + len(piece) >= reply.drop_after:
                piece = piece[: reply.drop_after - sent]
                if piece:
                    writer.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                    await writer.drain()
                transport = writer.transport
                transport.abort()  # no terminating chunk: the client sees a broken body
                return False
            if index and reply.delay_s:
                await asyncio.sleep(reply.delay_s)
            writer.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
            await writer.drain()
            sent += len(piece)
        if reply.stall:
            # Keep the response open until the client hangs up (cancellation tests).
            with contextlib.suppress(Exception):
                await reader.read()
            with self._lock:
                self._state.hangups += 1
            return False
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        return False


# ----------------------------------------------------------------------------------------------
# Body builders (documented event shapes of each provider)
# ----------------------------------------------------------------------------------------------

ToolCallSpec = tuple[str, str, Any]
"""(call id, tool name, input). An input of type `Fragments` is streamed verbatim."""


class Fragments(tuple[str, ...]):
    """Exact argument fragments for one call (may join to invalid JSON on purpose)."""


def _fragments(call_input: Any, pieces: int) -> list[str]:
    if isinstance(call_input, Fragments):
        return [f for f in call_input if f]
    text = "" if call_input == {} else json.dumps(call_input, ensure_ascii=False)
    return split_arguments(text, pieces)


def sse_body(frames: Iterable[tuple[str | None, Any]]) -> bytes:
    """Serialize frames; a dict/list payload is written as compact JSON, a str verbatim."""
    out: list[str] = []
    for event, data in frames:
        text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
        if event is not None:
            out.append(f"event: {event}\n")
        out.append(f"data: {text}\n\n")
    return "".join(out).encode("utf-8")


def split_arguments(text: str, pieces: int) -> list[str]:
    """Cut a JSON text into about `pieces` fragments, the way providers stream arguments."""
    if not text:
        return []
    pieces = max(1, min(pieces, len(text)))
    size = -(-len(text) // pieces)
    return [text[i : i + size] for i in range(0, len(text), size)]


def _as_list(text: str | Sequence[str] | None) -> list[str]:
    if text is None:
        return []
    return [text] if isinstance(text, str) else list(text)


def anthropic_frames(
    text: str | Sequence[str] | None = None,
    tool_calls: Sequence[ToolCallSpec] = (),
    *,
    stop: str | None = None,
    usage: tuple[int, int] = (12, 9),
    cache: tuple[int, int] = (0, 0),
    model: str = TEST_MODEL,
    argument_pieces: int = 2,
    terminal: bool = True,
) -> list[tuple[str | None, Any]]:
    """Messages API frames: text block(s) first, then one tool_use block per call.

    `usage` is (uncached input, output) and `cache` is (cache reads, cache writes), reported
    apart from `input_tokens` as the Messages API does.
    """
    frames: list[tuple[str | None, Any]] = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg_test_1",
                    "type": "message",
                    "role": "assistant",
                    "content": [],
                    "model": model,
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {
                        "input_tokens": usage[0],
                        "cache_read_input_tokens": cache[0],
                        "cache_creation_input_tokens": cache[1],
                        "output_tokens": 1,
                    },
                },
            },
        )
    ]
    index = 0
    texts = _as_list(text)
    if texts:
        frames.append(
            (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "text", "text": ""},
                },
            )
        )
        frames.append(("ping", {"type": "ping"}))
        for piece in texts:
            frames.append(
                (
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": 0,
                        "delta": {"type": "text_delta", "text": piece},
                    },
                )
            )
        frames.append(("content_block_stop", {"type": "content_block_stop", "index": 0}))
        index = 1
    for call_id, name, call_input in tool_calls:
        frames.append(
            (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "tool_use", "id": call_id, "name": name, "input": {}},
                },
            )
        )
        for fragment in _fragments(call_input, argument_pieces):
            frames.append(
                (
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "input_json_delta", "partial_json": fragment},
                    },
                )
            )
        frames.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
        index += 1
    stop_reason = stop or ("tool_use" if tool_calls else "end_turn")
    frames.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": usage[1]},
            },
        )
    )
    if terminal:
        frames.append(("message_stop", {"type": "message_stop"}))
    return frames


def anthropic_sse(
    text: str | Sequence[str] | None = None,
    tool_calls: Sequence[ToolCallSpec] = (),
    *,
    stop: str | None = None,
    usage: tuple[int, int] = (12, 9),
    cache: tuple[int, int] = (0, 0),
    model: str = TEST_MODEL,
    argument_pieces: int = 2,
    terminal: bool = True,
) -> bytes:
    """A Messages API SSE body: optional text (one delta per list item), then tool calls."""
    return sse_body(
        anthropic_frames(
            text,
            tool_calls,
            stop=stop,
            usage=usage,
            cache=cache,
            model=model,
            argument_pieces=argument_pieces,
            terminal=terminal,
        )
    )


def anthropic_error_frame(kind: str, message: str) -> tuple[str | None, Any]:
    return ("error", {"type": "error", "error": {"type": kind, "message": message}})


def _openai_chunk(
    delta: dict[str, Any] | None,
    *,
    model: str,
    finish: str | None = None,
    usage: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "id": "chatcmpl-test-1",
        "object": "chat.completion.chunk",
        "created": 1767225600,
        "model": model,
        "system_fingerprint": "fp_test",
        "choices": []
        if delta is None
        else [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        "usage": usage,
    }


def openai_frames(
    text: str | Sequence[str] | None = None,
    tool_calls: Sequence[ToolCallSpec] = (),
    *,
    stop: str | None = None,
    usage: tuple[int, int] = (12, 9),
    cached: int = 0,
    model: str = TEST_MODEL,
    argument_pieces: int = 2,
    terminal: bool = True,
) -> list[tuple[str | None, Any]]:
    """Chat Completions chunks with `include_usage`: role, text, tool calls, finish, usage.

    `usage` is (prompt, completion) tokens; `cached` is the part of the prompt tokens that
    came from the cache, counted inside `prompt_tokens` as Chat Completions does.
    """
    frames: list[tuple[str | None, Any]] = [
        (None, _openai_chunk({"role": "assistant", "content": ""}, model=model))
    ]
    for piece in _as_list(text):
        frames.append((None, _openai_chunk({"content": piece}, model=model)))
    for index, (call_id, name, call_input) in enumerate(tool_calls):
        frames.append(
            (
                None,
                _openai_chunk(
                    {
                        "tool_calls": [
                            {
                                "index": index,
                                "id": call_id,
                                "type": "function",
                                "function": {"name": name, "arguments": ""},
                            }
                        ]
                    },
                    model=model,
                ),
            )
        )
        for fragment in _fragments(call_input, argument_pieces):
            frames.append(
                (
                    None,
                    _openai_chunk(
                        {"tool_calls": [{"index": index, "function": {"arguments": fragment}}]},
                        model=model,
                    ),
                )
            )
    finish = stop or ("tool_calls" if tool_calls else "stop")
    frames.append((None, _openai_chunk({}, model=model, finish=finish)))
    frames.append(
        (
            None,
            _openai_chunk(
                None,
                model=model,
                usage={
                    "prompt_tokens": usage[0],
                    "completion_tokens": usage[1],
                    "total_tokens": usage[0] + usage[1],
                    "prompt_tokens_details": {"cached_tokens": cached},
                },
            ),
        )
    )
    if terminal:
        frames.append((None, "[DONE]"))
    return frames


def openai_sse(
    text: str | Sequence[str] | None = None,
    tool_calls: Sequence[ToolCallSpec] = (),
    *,
    stop: str | None = None,
    usage: tuple[int, int] = (12, 9),
    cached: int = 0,
    model: str = TEST_MODEL,
    argument_pieces: int = 2,
    terminal: bool = True,
) -> bytes:
    """A Chat Completions SSE body: optional text, then tool calls, finish, usage, `[DONE]`."""
    return sse_body(
        openai_frames(
            text,
            tool_calls,
            stop=stop,
            usage=usage,
            cached=cached,
            model=model,
            argument_pieces=argument_pieces,
            terminal=terminal,
        )
    )


def openai_error_frame(kind: str, code: str, message: str) -> tuple[str | None, Any]:
    return (None, {"error": {"type": kind, "code": code, "message": message, "param": None}})
