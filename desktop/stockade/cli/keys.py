"""`stockade keys set|status|delete PROVIDER`: manage provider API keys without ever showing one.

`set` reads the key from a hidden prompt on a terminal, or from the first line of stdin when
piped (`printf '%s\\n' "$KEY" | stockade keys set openai`). A key is never accepted on the
command line, where shell history and process listings would keep it.
"""

from __future__ import annotations

import argparse
import getpass
import sys
from typing import Any

from stockade.cli.common import ExitCode, UsageError, print_error, print_json
from stockade.protocol.errors import cap_utf16, mask_keys
from stockade.secrets.keystore import (
    ENV_VARS,
    KeyAdmin,
    KeyProvider,
    KeyringStatus,
    KeySource,
    KeyStore,
    ProviderKeyStatus,
    SecretsError,
    clean_key,
)

PROVIDERS = tuple(p.value for p in KeyProvider)


def add_parser(subparsers: Any) -> None:
    """Register the `keys` subcommand."""
    parser = subparsers.add_parser(
        "keys",
        help="save, check or remove provider API keys",
        description=(
            "Manage the API keys Stockade sends to AI providers. Keys live in the system "
            "keyring; ANTHROPIC_API_KEY / OPENAI_API_KEY, when set, take precedence."
        ),
    )
    actions = parser.add_subparsers(title="actions", dest="keys_action", metavar="ACTION")
    actions.required = True

    set_parser = actions.add_parser(
        "set",
        help="save a key (typed at a hidden prompt, or the first line of stdin)",
        description=(
            "Save the key for PROVIDER in the system keyring. On a terminal the key is typed "
            "at a hidden prompt; otherwise the first line of stdin is read. The key is never "
            "taken from the command line."
        ),
    )
    set_parser.add_argument("provider", metavar="PROVIDER", help=", ".join(PROVIDERS))
    # Caught only to refuse them without echoing: argparse would print unknown arguments back.
    set_parser.add_argument("stray", nargs="*", help=argparse.SUPPRESS)
    set_parser.add_argument("--key", "--api-key", dest="argv_key", help=argparse.SUPPRESS)
    set_parser.add_argument("--json", action="store_true", help="print one JSON document")

    status_parser = actions.add_parser(
        "status",
        help="show which providers have a key (never the key itself)",
        description=(
            "Show, per provider, whether a key is available and where it comes from "
            "(env, keyring or session), and whether the keyring is secure. With PROVIDER, "
            "exit 1 when that provider has no key."
        ),
    )
    status_parser.add_argument("provider", nargs="?", metavar="PROVIDER", help=", ".join(PROVIDERS))
    status_parser.add_argument("--json", action="store_true", help="print one JSON document")

    delete_parser = actions.add_parser(
        "delete",
        help="remove a saved key",
        description="Remove the saved key for PROVIDER from the system keyring.",
    )
    delete_parser.add_argument("provider", metavar="PROVIDER", help=", ".join(PROVIDERS))
    delete_parser.add_argument("--json", action="store_true", help="print one JSON document")

    team_key = actions.add_parser(
        "import-team-key",
        help="import a team's snapshot key (from the administrator, out of band)",
        description=(
            "Save TEAM's snapshot key in the system keyring, so this machine can seal, show "
            "and resume the team's parked runs. The key (base64 of 32 bytes) is read from a "
            "hidden prompt on a terminal or the first line of stdin, never the command line. "
            "With --generate a new key is made, saved and printed once for the "
            "administrator to hand out."),
    )
    team_key.add_argument("team", metavar="TEAM", help="the team id")
    team_key.add_argument("--generate", action="store_true",
                          help="make a new team key, save it and print it once")
    team_key.add_argument("--json", action="store_true", help="print one JSON document")

    db_password = actions.add_parser(
        "set-database-password",
        help="save your team database role's password in the keyring",
        description=(
            "Save the password of the role in the team database URL (--database-url, else "
            "STOCKADE_DATABASE_URL, else settings) in the system keyring; read from a hidden "
            "prompt or the first line of stdin. A libpq service file or PGPASSFILE work too."),
    )
    db_password.add_argument("--database-url", metavar="URL", help="the team database")
    db_password.add_argument("--json", action="store_true", help="print one JSON document")

    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Carry out one `keys` action; returns the exit code."""
    action = args.keys_action
    if action == "import-team-key":
        return _import_team_key(KeyStore(), args)
    if action == "set-database-password":
        return _set_database_password(KeyStore(), args)
    admin = KeyStore().admin()
    if action == "set":
        return _set(admin, args)
    if action == "status":
        return _status(admin, args)
    if action == "delete":
        return _delete(admin, args)
    raise UsageError(f"keys: unknown action {action!r}")


def _provider(raw: str | None) -> str:
    if raw in PROVIDERS:
        return str(raw)
    # Someone may paste a key where the provider goes; never echo anything key-shaped.
    shown = cap_utf16(mask_keys(raw or ""), 40)
    raise UsageError(f"keys: unknown provider {shown!r}; expected one of: {', '.join(PROVIDERS)}")


def _keyring_json(status: KeyringStatus) -> dict[str, object]:
    return {
        "is_secure": status.is_secure,
        "backend": status.backend,
        "message": status.message,
        "session_only": status.session_only,
    }


def _read_key(provider: str) -> str:
    if sys.stdin is None:
        return ""
    if sys.stdin.isatty():
        try:
            return getpass.getpass(f"API key for {provider} (input is hidden): ")
        except EOFError:
            return ""
    return sys.stdin.readline()


def _set(admin: KeyAdmin, args: argparse.Namespace) -> int:
    provider = _provider(args.provider)
    if args.stray or args.argv_key is not None:
        raise UsageError(
            "keys set: the key is never taken from the command line (shell history would keep "
            "it); type it at the prompt or pipe it on stdin"
        )
    keyring_status = admin.status()
    if not keyring_status.is_secure:
        # A session-only key dies with this process, so saving it here would be a silent no-op.
        return _report_failure(
            args,
            provider,
            "No secure system keyring is available, so the key was not saved (it would be "
            "forgotten as soon as this command ends). For headless runs, set "
            f"{ENV_VARS.get(KeyProvider(provider), 'the provider key variable')} instead.",
            keyring_status,
        )
    try:
        key = clean_key(_read_key(provider))
    except SecretsError as exc:
        raise UsageError(f"keys set: {exc}") from None
    try:
        source = admin.set_key(provider, key)
    except SecretsError as exc:
        return _report_failure(args, provider, str(exc), keyring_status)
    status = admin.provider_status(provider)
    where = "the system keyring" if source is KeySource.KEYRING else "this session only"
    note = None
    if status.source is KeySource.ENV:
        note = f"{status.env_var} is set in this environment and takes precedence over it."
    if args.json:
        print_json(
            {
                "provider": provider,
                "saved": True,
                "stored_in": source.value,
                "note": note,
                "keyring": _keyring_json(keyring_status),
            }
        )
    else:
        print(f"Saved the {provider} key in {where} ({keyring_status.backend}).")
        if note:
            print(f"Note: {note}")
    return ExitCode.OK


def _report_failure(
    args: argparse.Namespace, provider: str, message: str, keyring_status: KeyringStatus
) -> int:
    if args.json:
        print_json(
            {
                "provider": provider,
                "saved": False,
                "error": message,
                "keyring": _keyring_json(keyring_status),
            }
        )
    else:
        print_error(f"keys: {message}")
    return ExitCode.FAILED


def _describe(status: ProviderKeyStatus) -> str:
    if status.source is KeySource.ENV:
        extra = "; a saved key is also present" if status.stored else ""
        text = f"key available from {status.env_var}{extra}"
    elif status.source is KeySource.KEYRING:
        text = "key saved in the system keyring"
    elif status.source is KeySource.SESSION:
        text = "key kept for this session only"
    else:
        text = "no key"
    if status.problem:
        text += f" ({status.problem})"
    return text


def _status(admin: KeyAdmin, args: argparse.Namespace) -> int:
    chosen = [_provider(args.provider)] if args.provider is not None else list(PROVIDERS)
    keyring_status = admin.status()
    statuses = [admin.provider_status(p) for p in chosen]
    if args.json:
        print_json(
            {
                "keyring": _keyring_json(keyring_status),
                "providers": [s.to_json() for s in statuses],
            }
        )
    else:
        security = "secure" if keyring_status.is_secure else "NOT secure: session only"
        print(f"Keyring: {keyring_status.backend} ({security})")
        if not keyring_status.is_secure:
            print(f"  {keyring_status.message}")
        for status in statuses:
            print(f"{status.provider.value}: {_describe(status)}")
    if any(s.problem for s in statuses):
        return ExitCode.FAILED
    if args.provider is not None and not statuses[0].has_key:
        return ExitCode.FAILED
    return ExitCode.OK


def _delete(admin: KeyAdmin, args: argparse.Namespace) -> int:
    provider = _provider(args.provider)
    keyring_status = admin.status()
    before = admin.provider_status(provider)
    try:
        admin.delete_key(provider)
    except SecretsError as exc:
        if args.json:
            print_json({"provider": provider, "deleted": False, "error": str(exc)})
        else:
            print_error(f"keys: {exc}")
        return ExitCode.FAILED
    after = admin.provider_status(provider)
    note = None
    if after.source is KeySource.ENV:
        note = f"{after.env_var} is still set in this environment and will be used."
    if args.json:
        print_json(
            {
                "provider": provider,
                "deleted": before.stored,
                "note": note,
                "keyring": _keyring_json(keyring_status),
            }
        )
    else:
        if before.stored:
            print(f"Removed the saved {provider} key.")
        else:
            print(f"There was no saved {provider} key to remove.")
        if note:
            print(f"Note: {note}")
    return ExitCode.OK


def _read_secret(prompt: str) -> str:
    if sys.stdin is None:
        return ""
    if sys.stdin.isatty():
        try:
            return getpass.getpass(prompt)
        except EOFError:
            return ""
    return sys.stdin.readline()


def _secure_or_refuse(store: KeyStore, args: argparse.Namespace, what: str) -> int | None:
    status = store.status()
    if status.is_secure:
        return None
    message = (f"No secure system keyring is available, so {what} was not saved (it would be "
               "forgotten as soon as this command ends).")
    if args.json:
        print_json({"saved": False, "error": message, "keyring": _keyring_json(status)})
    else:
        print_error(f"keys: {message}")
    return ExitCode.FAILED


def _import_team_key(store: KeyStore, args: argparse.Namespace) -> int:
    from stockade.governance.sealing import SealError
    from stockade.governance.teamkeys import decode_team_key, new_team_key, team_key_name

    try:
        name = team_key_name(args.team)
    except ValueError:
        raise UsageError(f"keys import-team-key: {cap_utf16(mask_keys(args.team), 40)!r} is "
                         "not a team id") from None
    refused = _secure_or_refuse(store, args, f"team {args.team}'s key")
    if refused is not None:
        return refused
    text = new_team_key() if args.generate else _read_secret(
        f"Snapshot key of team {args.team} (base64, input is hidden): ").strip()
    try:
        decode_team_key(text)
    except SealError as exc:
        raise UsageError(f"keys import-team-key: {exc}") from None
    try:
        store.set_secret(name, text)
    except SecretsError as exc:
        print_error(f"keys: {exc}")
        return ExitCode.FAILED
    if args.json:
        out: dict[str, object] = {"team": args.team, "saved": True, "generated": args.generate}
        if args.generate:
            out["key"] = text
        print_json(out)
    else:
        print(f"Saved team {args.team}'s snapshot key in the system keyring.")
        if args.generate:
            print("Hand this key to each member of the team out of band (they run `stockade "
                  f"keys import-team-key {args.team}`); it is not shown again:", file=sys.stderr)
            print(text)
    return ExitCode.OK


def _set_database_password(store: KeyStore, args: argparse.Namespace) -> int:
    from stockade.governance.team import StoreError, database_password_secret

    try:
        target, name = database_password_secret(args.database_url)
    except StoreError as exc:
        raise UsageError(f"keys set-database-password: {exc}") from None
    refused = _secure_or_refuse(store, args, "the database password")
    if refused is not None:
        return refused
    password = _read_secret(f"Password of {target.display} (input is hidden): ").rstrip("\r\n")
    if not password:
        raise UsageError("keys set-database-password: the password is empty")
    try:
        store.set_secret(name, password)
    except SecretsError as exc:
        print_error(f"keys: {exc}")
        return ExitCode.FAILED
    if args.json:
        print_json({"database": target.display, "saved": True})
    else:
        print(f"Saved the password for {target.display} in the system keyring.")
    return ExitCode.OK
