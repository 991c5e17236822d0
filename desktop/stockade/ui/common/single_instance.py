"""One Stockade window per user and data folder: a second launch hands its file to the first.

The running app listens on a local socket (a Unix socket in `$XDG_RUNTIME_DIR`, a named pipe on
Windows) named from the user and the data folder, so two users, or one user with two
`STOCKADE_HOME`s, never meet. A launch first tries to connect; when something answers "ok" the
launch is done. When nothing listens (or it does not answer in time) the launch opens its own
window and becomes the one that listens: the fallback is the ordinary start.

The request is one line of JSON, `{"v": 1, "file": "/abs/path" | null}`; the answer is one line,
`ok` or `error`. The socket is private to the user (owner-only permissions), and all a request
can do is what launching `stockade FILE` does: open a file in the window.
"""

from __future__ import annotations

import getpass
import hashlib
import json
import logging
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtNetwork import QAbstractSocket, QLocalServer, QLocalSocket

log = logging.getLogger("stockade.ui")

PROTOCOL_VERSION = 1
MAX_REQUEST_BYTES = 16 * 1024
"""A path is at most a few KB on every OS; anything longer is not a launch request."""
CONNECT_TIMEOUT_MS = 500
REPLY_TIMEOUT_MS = 3000
"""How long a launch waits for the running window to take its file before opening its own."""
MAX_SOCKET_PATH_BYTES = 100
"""A Unix socket path must fit in sockaddr_un (104 bytes on macOS, 108 on Linux)."""
CLIENT_IDLE_TIMEOUT_MS = 5000
"""A connection that never completes its line is dropped, so it cannot hold the server."""


class RequestError(ValueError):
    """A message on the instance socket that is not a valid launch request."""


@dataclass(frozen=True, slots=True)
class LaunchRequest:
    """What a second launch asks of the running window: bring itself forward, open `file`."""

    file: str | None

    def encode(self) -> bytes:
        return json.dumps({"v": PROTOCOL_VERSION, "file": self.file}).encode("utf-8") + b"\n"

    @classmethod
    def decode(cls, line: bytes) -> LaunchRequest:
        try:
            data = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            raise RequestError("not a JSON line") from None
        if not isinstance(data, dict) or data.get("v") != PROTOCOL_VERSION:
            raise RequestError("unknown request version")
        file = data.get("file")
        if file is not None and (not isinstance(file, str) or not file or "\x00" in file
                                 or not os.path.isabs(file)):
            raise RequestError("file must be an absolute path")
        return cls(file)


def instance_key(data_folder: Path) -> str:
    """The name every launch of this user on this data folder agrees on."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no login name (containers): the numeric id still separates
        user = str(os.getuid()) if hasattr(os, "getuid") else "user"
    digest = hashlib.sha256(f"{user}\0{data_folder.resolve()}".encode()).hexdigest()[:16]
    return f"stockade-{digest}"


def server_name(key: str) -> str:
    """A socket path in the user's private runtime folder when there is one; otherwise the
    bare key, which Qt places in the temp folder (owner-only permissions still apply)."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if sys.platform != "win32" and runtime and os.path.isdir(runtime):
        path = str(Path(runtime) / f"{key}.sock")
        if len(os.fsencode(path)) <= MAX_SOCKET_PATH_BYTES:
            return path
    return key


def hand_off(name: str, file: str | None) -> bool:
    """Give `file` (None: just come forward) to a running window; True when it accepted.

    Blocking and short (at most CONNECT_TIMEOUT_MS + REPLY_TIMEOUT_MS); runs before this
    launch builds a window, so there is no event loop to keep alive.
    """
    socket = QLocalSocket()
    socket.connectToServer(name)
    if not socket.waitForConnected(CONNECT_TIMEOUT_MS):
        return False
    try:
        socket.write(LaunchRequest(file).encode())
        if not socket.waitForBytesWritten(REPLY_TIMEOUT_MS):
            log.warning("the running Stockade window did not take the request; opening a new one")
            return False
        reply = b""
        while b"\n" not in reply and len(reply) < 64:
            if not socket.bytesAvailable() and not socket.waitForReadyRead(REPLY_TIMEOUT_MS):
                break
            reply += bytes(socket.readAll().data())
        if reply.strip() == b"ok":
            return True
        log.warning("the running Stockade window refused the request (%r); opening a new one",
                    reply[:64])
        return False
    finally:
        socket.abort()


class InstanceServer(QObject):
    """Listens for later launches; emits what they ask for."""

    fileRequested = Signal(str)
    activationRequested = Signal()

    def __init__(self, name: str, parent: QObject | None) -> None:
        super().__init__(parent)
        self.setObjectName("instanceServer")
        self.name = name
        self._server = QLocalServer(self)
        self._server.setObjectName("instanceLocalServer")
        self._server.setSocketOptions(QLocalServer.SocketOption.UserAccessOption)
        self._server.newConnection.connect(self._on_server_newConnection)
        self._buffers: dict[QLocalSocket, bytes] = {}

    def listen(self) -> bool:
        """Start listening; False (and a log line) when this launch cannot be the listener."""
        if self._server.listen(self.name):
            return True
        if self._server.serverError() == QAbstractSocket.SocketError.AddressInUseError:
            # Nothing answered hand_off, so the name is left over from a run that crashed.
            QLocalServer.removeServer(self.name)
            if self._server.listen(self.name):
                return True
        log.warning("other launches cannot reach this window (%s)", self._server.errorString())
        return False

    def close(self) -> None:
        self._server.close()

    def _on_server_newConnection(self) -> None:
        while self._server.hasPendingConnections():
            socket = self._server.nextPendingConnection()
            if socket is None:
                break
            socket.setObjectName("instanceClient")
            self._buffers[socket] = b""
            socket.readyRead.connect(lambda s=socket: self._on_client_readyRead(s))
            socket.disconnected.connect(lambda s=socket: self._forget(s))
            QTimer.singleShot(CLIENT_IDLE_TIMEOUT_MS, socket, lambda s=socket: self._drop(s))

    def _on_client_readyRead(self, socket: QLocalSocket) -> None:
        if socket not in self._buffers:
            return
        data = self._buffers[socket] + bytes(socket.readAll().data())
        if b"\n" not in data:
            if len(data) > MAX_REQUEST_BYTES:
                self._answer(socket, b"error\n", "a request over the size limit")
            else:
                self._buffers[socket] = data
            return
        line = data.split(b"\n", 1)[0]
        try:
            request = LaunchRequest.decode(line) if len(line) <= MAX_REQUEST_BYTES else None
        except RequestError as err:
            self._answer(socket, b"error\n", str(err))
            return
        if request is None:
            self._answer(socket, b"error\n", "a request over the size limit")
            return
        self._answer(socket, b"ok\n", None)
        self.activationRequested.emit()
        if request.file is not None:
            self.fileRequested.emit(request.file)

    def _answer(self, socket: QLocalSocket, reply: bytes, problem: str | None) -> None:
        if problem is not None:
            log.warning("ignored a message on the instance socket: %s", problem)
        self._buffers.pop(socket, None)
        socket.write(reply)
        socket.flush()
        socket.disconnectFromServer()

    def _drop(self, socket: QLocalSocket) -> None:
        if socket in self._buffers:
            self._answer(socket, b"error\n", "a connection that sent no request in time")

    def _forget(self, socket: QLocalSocket) -> None:
        self._buffers.pop(socket, None)
        socket.deleteLater()
