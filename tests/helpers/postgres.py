"""A real PostgreSQL server for the tests: `initdb` into a temporary folder, started on a
loopback port and a Unix socket, stopped and removed at the end.

The server binaries come from Debian's `postgresql` package (`tools/_setup.sh` installs it).
`initdb` refuses to run as root, so under root (CI) the server runs as the unprivileged
`postgres` user (or `nobody`) through `runuser`. Local connections trust the OS (the admin
role over the socket); TCP connections on 127.0.0.1 need a password (scram-sha-256), so the
tests exercise the same password sources the app uses.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ADMIN_ROLE = "stockade_admin"
DATABASE = "stockade"


def server_binaries() -> Path | None:
    """The newest installed PostgreSQL `bin` folder, or None."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                   key=lambda p: int(Path(p).parent.parent.name))
    if found:
        return Path(found[-1]).parent
    on_path = shutil.which("initdb")
    return Path(on_path).parent if on_path else None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _server_user() -> str | None:
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            pwd.getpwnam(name)
            return name
    raise RuntimeError("running as root, but there is neither a postgres nor a nobody user "
                       "to run the test PostgreSQL server as")


@dataclass
class PostgresServer:
    """One running server; `url(role)` gives a TCP URL, `admin_url` the trusted socket URL."""

    root: Path
    port: int
    bindir: Path
    user: str | None
    _stopped: bool = field(default=False)

    @property
    def socket_dir(self) -> Path:
        return self.root / "socket"

    @property
    def admin_url(self) -> str:
        return f"postgresql://{ADMIN_ROLE}@/{DATABASE}?host={self.socket_dir}&port={self.port}"

    def url(self, role: str, *, socket_path: bool = False) -> str:
        if socket_path:
            return f"postgresql://{role}@/{DATABASE}?host={self.socket_dir}&port={self.port}"
        return f"postgresql://{role}@127.0.0.1:{self.port}/{DATABASE}"

    def _run(self, *args: str) -> None:
        command = [str(self.bindir / args[0]), *args[1:]]
        if self.user is not None:
            command = ["runuser", "-u", self.user, "--", *command]
        subprocess.run(command, check=True, capture_output=True, timeout=120)

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        with contextlib.suppress(subprocess.SubprocessError, OSError):
            self._run("pg_ctl", "-D", str(self.root / "data"), "-m", "immediate", "-w", "stop")
        shutil.rmtree(self.root, ignore_errors=True)


def start_server(*, durable: bool = False) -> PostgresServer:
    """initdb + start; `durable=False` turns off fsync (tests), True keeps defaults (bench)."""
    bindir = server_binaries()
    if bindir is None:
        raise FileNotFoundError("PostgreSQL server binaries (initdb) are not installed")
    user = _server_user()
    root = Path(tempfile.mkdtemp(prefix="stockade-pg-"))
    (root / "socket").mkdir()
    if user is not None:
        entry = pwd.getpwnam(user)
        for path in (root, root / "socket"):
            os.chown(path, entry.pw_uid, entry.pw_gid)
    server = PostgresServer(root, _free_port(), bindir, user)
    try:
        server._run("initdb", "-D", str(root / "data"), "-U", ADMIN_ROLE, "-E", "UTF8",
                    "--no-locale", "--auth-local=trust", "--auth-host=scram-sha-256")
        options = [f"-p {server.port}", f"-k {server.socket_dir}",
                   "-c listen_addresses=127.0.0.1", "-c max_connections=100",
                   "-c shared_buffers=32MB"]
        if not durable:
            options += ["-c fsync=off", "-c synchronous_commit=off",
                        "-c full_page_writes=off"]
        server._run("pg_ctl", "-D", str(root / "data"), "-l", str(root / "server.log"),
                    "-o", " ".join(options), "-w", "-t", "60", "start")
        subprocess.run([str(bindir / "createdb"), "-h", str(server.socket_dir), "-p",
                        str(server.port), "-U", ADMIN_ROLE, DATABASE],
                       check=True, capture_output=True, timeout=60)
    except BaseException:
        server.stop()
        raise
    return server


@contextlib.contextmanager
def running_server(*, durable: bool = False) -> Iterator[PostgresServer]:
    server = start_server(durable=durable)
    try:
        yield server
    finally:
        server.stop()
