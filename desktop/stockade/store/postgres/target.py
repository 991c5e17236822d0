"""Where a team's PostgreSQL database is: the URL from settings or `STOCKADE_DATABASE_URL`,
checked to carry no password, and the display form that names it without secrets."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from stockade.store.database import StoreError

PASSWORD_SECRET_PREFIX = "database-password-"


class DatabaseUrlError(StoreError):
    """The database URL cannot be used (a password in it, or not a PostgreSQL address)."""


@dataclass(frozen=True, slots=True)
class DatabaseTarget:
    """A checked connection string and the parts of it that identify the database."""

    conninfo: str
    host: str
    port: str
    dbname: str
    user: str
    service: str

    @property
    def display(self) -> str:
        """`postgresql://role@host:port/database` (or the service name): safe to show and log."""
        if self.service and not self.host:
            return f"service={self.service}"
        who = f"{self.user}@" if self.user else ""
        port = f":{self.port}" if self.port else ""
        return f"postgresql://{who}{self.host or 'localhost'}{port}/{self.dbname}"

    @property
    def password_secret(self) -> str:
        """The keyring name of this role's password on this database (`keys set-database-password`)."""
        ident = "|".join((self.service, self.host, self.port, self.dbname, self.user))
        return PASSWORD_SECRET_PREFIX + hashlib.sha256(ident.encode("utf-8")).hexdigest()[:16]


def parse_database_url(url: str) -> DatabaseTarget:
    """Check a `postgresql://` URL or libpq `key=value` string; a password in it is refused.

    Passwords belong in the keyring (`stockade keys set-database-password`), a libpq service
    file (`service=NAME`) or a password file (`PGPASSFILE`, `~/.pgpass`), never in settings
    or the environment, where they would be copied into logs and shell history.
    """
    from psycopg import conninfo as libpq

    text = url.strip()
    if not text:
        raise DatabaseUrlError("the database URL is empty")
    if "://" in text and not text.startswith(("postgresql://", "postgres://")):
        raise DatabaseUrlError("the database URL must start with postgresql:// (team mode "
                               "runs on PostgreSQL only)")
    try:
        parts = libpq.conninfo_to_dict(text)
    except Exception:  # psycopg raises ProgrammingError with libpq's own text
        raise DatabaseUrlError("the database URL is not a valid PostgreSQL connection string "
                               "(expected postgresql://ROLE@HOST:PORT/DATABASE)") from None
    if parts.get("password"):
        raise DatabaseUrlError(
            "the database URL contains a password; remove it and keep the password in the "
            "keyring (stockade keys set-database-password), a libpq service file or PGPASSFILE")
    return DatabaseTarget(
        conninfo=libpq.make_conninfo("", **{k: v for k, v in parts.items() if v is not None}),
        host=str(parts.get("host") or ""), port=str(parts.get("port") or ""),
        dbname=str(parts.get("dbname") or parts.get("user") or ""),
        user=str(parts.get("user") or ""), service=str(parts.get("service") or ""))
