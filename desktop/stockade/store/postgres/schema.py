"""The PostgreSQL form of each schema version, with teams, roles and row-level security.

Every version here has the number and tables of the SQLite version in `store/migrations.py`
(a test keeps the columns equal), plus what a shared database needs: every row carries the
`team_id` of the role that wrote it, row-level security limits every statement to the
connecting role's team (`my_team()`: the team the `member` table gives `current_user`), and
the writer of a row is recorded by the database itself (`created_by`, `appended_by`,
`actor_role` default to `current_user`, and the policies refuse any other value). What a role
may do comes from its group role: `stockade_analyst`, `stockade_approver` or
`stockade_auditor` (read only). Only the administrator who owns the schema changes it.
"""

from __future__ import annotations

from stockade.store.interface import MemberKind
from stockade.store.migrations import Migration

SCHEMA = "stockade"
GROUP_ROLES: dict[MemberKind, str] = {
    MemberKind.ANALYST: "stockade_analyst",
    MemberKind.APPROVER: "stockade_approver",
    MemberKind.AUDITOR: "stockade_auditor",
}
WRITERS = "stockade_analyst, stockade_approver"
READERS = "stockade_analyst, stockade_approver, stockade_auditor"
PG_ONLY_COLUMNS = frozenset({"team_id", "created_by", "appended_by", "actor_role", "rowid"})
"""Columns only the team store has (who and which team); every other column matches SQLite."""

# An uncorrelated sub-select is evaluated once per statement (an InitPlan), not once per row,
# and lets the planner use the (team_id, ...) indexes.
MY_TEAM = "(SELECT stockade.my_team())"


def _team_policies(table: str, *, insert_check: str = "", update: bool = True,
                   delete: bool = False) -> tuple[str, ...]:
    extra = f" AND {insert_check}" if insert_check else ""
    out = [
        f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY",
        f"CREATE POLICY {table}_read ON {table} FOR SELECT USING (team_id = {MY_TEAM})",
        f"CREATE POLICY {table}_insert ON {table} FOR INSERT "
        f"WITH CHECK (team_id = {MY_TEAM}{extra})",
    ]
    if update:
        out.append(f"CREATE POLICY {table}_update ON {table} FOR UPDATE "
                   f"USING (team_id = {MY_TEAM}) WITH CHECK (team_id = {MY_TEAM})")
    if delete:
        out.append(f"CREATE POLICY {table}_delete ON {table} FOR DELETE "
                   f"USING (team_id = {MY_TEAM})")
    return tuple(out)


def _refuse_truncate(table: str, message: str) -> tuple[str, ...]:
    return (
        f"""
        CREATE FUNCTION {table}_no_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RAISE EXCEPTION '{message}'; END $$
        """,
        f"CREATE TRIGGER {table}_no_truncate BEFORE TRUNCATE ON {table} "
        f"FOR EACH STATEMENT EXECUTE FUNCTION {table}_no_truncate()",
    )


_TEAMS = (
    """
    CREATE TABLE team(
        team_id TEXT PRIMARY KEY CHECK (team_id ~ '^[a-z][a-z0-9-]{0,39}$'),
        per_day BIGINT CHECK (per_day >= 0),
        per_month BIGINT CHECK (per_month >= 0),
        per_analyst_day BIGINT CHECK (per_analyst_day >= 0),
        per_analyst_month BIGINT CHECK (per_analyst_month >= 0),
        created_at TIMESTAMPTZ NOT NULL DEFAULT now()
    )
    """,
    """
    CREATE TABLE member(
        role_name TEXT PRIMARY KEY,
        team_id TEXT NOT NULL REFERENCES team(team_id),
        added_at TIMESTAMPTZ NOT NULL DEFAULT now()
    )
    """,
    "CREATE INDEX member_team ON member(team_id)",
    # Invoker's rights: it reads `member` under the member's own policy (its own row only).
    """
    CREATE FUNCTION my_team() RETURNS TEXT LANGUAGE sql STABLE
    SET search_path = pg_catalog, stockade AS $$
        SELECT team_id FROM stockade.member WHERE role_name = current_user
    $$
    """,
    # One row per team: every write transaction locks it first, so the writers of one team
    # run one after the other (as SQLite's BEGIN IMMEDIATE does for one file) and other
    # teams never wait. A row lock, not an advisory lock: row-level security keeps another
    # team from taking it.
    """
    CREATE TABLE team_lock(
        team_id TEXT PRIMARY KEY REFERENCES team(team_id),
        touched BIGINT NOT NULL DEFAULT 0
    )
    """,
    "ALTER TABLE team ENABLE ROW LEVEL SECURITY",
    f"CREATE POLICY team_own ON team FOR SELECT USING (team_id = {MY_TEAM})",
    "ALTER TABLE member ENABLE ROW LEVEL SECURITY",
    "CREATE POLICY member_self ON member FOR SELECT USING (role_name = current_user)",
    "ALTER TABLE team_lock ENABLE ROW LEVEL SECURITY",
    f"CREATE POLICY team_lock_own ON team_lock USING (team_id = {MY_TEAM}) "
    f"WITH CHECK (team_id = {MY_TEAM})",
    f"GRANT USAGE ON SCHEMA stockade TO {READERS}",
    f"GRANT SELECT ON schema_version, team, member TO {READERS}",
    # SELECT ... FOR UPDATE needs UPDATE on one column; `touched` is the only one granted.
    f"GRANT SELECT, UPDATE (touched) ON team_lock TO {WRITERS}",
    "REVOKE ALL ON FUNCTION my_team() FROM PUBLIC",
    f"GRANT EXECUTE ON FUNCTION my_team() TO {READERS}",
)

_LEDGER = (
    """
    CREATE TABLE reservation(
        team_id TEXT NOT NULL DEFAULT stockade.my_team() REFERENCES team(team_id),
        created_by TEXT NOT NULL DEFAULT current_user,
        rowid BIGINT GENERATED ALWAYS AS IDENTITY,
        id TEXT NOT NULL,
        run_id TEXT NOT NULL,
        provider TEXT NOT NULL,
        model TEXT NOT NULL,
        created_ms BIGINT NOT NULL,
        day_key TEXT NOT NULL,
        month_key TEXT NOT NULL,
        reserved BIGINT NOT NULL CHECK (reserved >= 0),
        estimated BIGINT NOT NULL CHECK (estimated >= 0),
        status TEXT NOT NULL CHECK (status IN ('open', 'settled', 'refunded', 'released')),
        settled BIGINT CHECK (settled >= 0),
        released BIGINT CHECK (released >= 0),
        actual BIGINT CHECK (actual >= 0),
        input_tokens BIGINT CHECK (input_tokens >= 0),
        output_tokens BIGINT CHECK (output_tokens >= 0),
        cached_input_tokens BIGINT CHECK (cached_input_tokens >= 0),
        closed_ms BIGINT,
        PRIMARY KEY (team_id, id),
        CHECK ((status = 'open' AND settled IS NULL AND released IS NULL)
            OR (status <> 'open' AND settled IS NOT NULL AND released IS NOT NULL
                AND settled + released = reserved))
    )
    """,
    "CREATE INDEX reservation_run ON reservation(team_id, run_id)",
    "CREATE INDEX reservation_day ON reservation(team_id, day_key)",
    "CREATE INDEX reservation_month ON reservation(team_id, month_key)",
    "CREATE INDEX reservation_member ON reservation(team_id, created_by, month_key)",
    # A closed reservation is history; an open one keeps its owner, team and amount.
    """
    CREATE FUNCTION reservation_guard() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP = 'DELETE' THEN RAISE EXCEPTION 'ledger rows cannot be deleted'; END IF;
        IF OLD.status <> 'open' THEN
            RAISE EXCEPTION 'a settled reservation cannot change';
        END IF;
        IF NEW.team_id <> OLD.team_id OR NEW.created_by <> OLD.created_by
                OR NEW.id <> OLD.id OR NEW.run_id <> OLD.run_id
                OR NEW.reserved <> OLD.reserved OR NEW.day_key <> OLD.day_key
                OR NEW.month_key <> OLD.month_key THEN
            RAISE EXCEPTION 'a reservation keeps its owner, run, windows and amount';
        END IF;
        RETURN NEW;
    END $$
    """,
    "CREATE TRIGGER reservation_guard BEFORE UPDATE OR DELETE ON reservation "
    "FOR EACH ROW EXECUTE FUNCTION reservation_guard()",
    *_refuse_truncate("reservation", "ledger rows cannot be deleted"),
    *_team_policies("reservation", insert_check="created_by = current_user"),
    f"GRANT SELECT ON reservation TO {READERS}",
    f"GRANT INSERT, UPDATE ON reservation TO {WRITERS}",
)

_TRAJECTORY = (
    """
    CREATE TABLE event(
        team_id TEXT NOT NULL DEFAULT stockade.my_team() REFERENCES team(team_id),
        appended_by TEXT NOT NULL DEFAULT current_user,
        seq BIGINT NOT NULL CHECK (seq >= 1),
        run_id TEXT NOT NULL,
        run_seq BIGINT NOT NULL CHECK (run_seq >= 0),
        kind TEXT NOT NULL,
        at_ms BIGINT NOT NULL,
        payload TEXT NOT NULL,
        prev_hash TEXT NOT NULL,
        hash TEXT NOT NULL,
        PRIMARY KEY (team_id, seq),
        UNIQUE (team_id, run_id, run_seq)
    )
    """,
    """
    CREATE FUNCTION event_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN RAISE EXCEPTION 'the trajectory is append-only'; END $$
    """,
    "CREATE TRIGGER event_append_only BEFORE UPDATE OR DELETE ON event "
    "FOR EACH ROW EXECUTE FUNCTION event_append_only()",
    *_refuse_truncate("event", "the trajectory is append-only"),
    *_team_policies("event", insert_check="appended_by = current_user", update=False),
    f"GRANT SELECT ON event TO {READERS}",
    f"GRANT INSERT ON event TO {WRITERS}",
)

# Who may write a decision row: the connected role in its own name, and only an approver for
# a run another role started.
_DECIDERS = ("actor_role = current_user AND "
             "(pg_has_role(current_user, 'stockade_approver', 'MEMBER') OR EXISTS ("
             "SELECT 1 FROM stockade.run r WHERE r.team_id = decision.team_id "
             "AND r.run_id = decision.run_id AND r.created_by = current_user))")

_RUNS = (
    """
    CREATE TABLE run(
        team_id TEXT NOT NULL DEFAULT stockade.my_team() REFERENCES team(team_id),
        created_by TEXT NOT NULL DEFAULT current_user,
        run_id TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('running', 'parked', 'finished', 'interrupted')),
        document_path TEXT NOT NULL,
        document_digest TEXT,
        provider TEXT NOT NULL,
        model TEXT NOT NULL,
        created_ms BIGINT NOT NULL,
        updated_ms BIGINT NOT NULL,
        owner_pid BIGINT,
        owner_host TEXT,
        claimed INTEGER NOT NULL DEFAULT 0 CHECK (claimed IN (0, 1)),
        snapshot BYTEA,
        outcome TEXT,
        reason TEXT,
        PRIMARY KEY (team_id, run_id),
        CHECK ((status = 'parked') = (snapshot IS NOT NULL))
    )
    """,
    "CREATE INDEX run_status ON run(team_id, status)",
    "CREATE INDEX run_document ON run(team_id, document_path)",
    """
    CREATE FUNCTION run_guard() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP = 'DELETE' THEN RAISE EXCEPTION 'runs cannot be deleted'; END IF;
        IF NEW.team_id <> OLD.team_id OR NEW.created_by <> OLD.created_by
                OR NEW.run_id <> OLD.run_id THEN
            RAISE EXCEPTION 'a run keeps its id, team and the role that started it';
        END IF;
        RETURN NEW;
    END $$
    """,
    "CREATE TRIGGER run_guard BEFORE UPDATE OR DELETE ON run "
    "FOR EACH ROW EXECUTE FUNCTION run_guard()",
    *_team_policies("run", insert_check="created_by = current_user"),
    """
    CREATE TABLE pending_call(
        team_id TEXT NOT NULL DEFAULT stockade.my_team(),
        run_id TEXT NOT NULL,
        call_id TEXT NOT NULL,
        position INTEGER NOT NULL,
        tool TEXT NOT NULL,
        input_digest TEXT NOT NULL,
        destructive INTEGER NOT NULL CHECK (destructive IN (0, 1)),
        PRIMARY KEY (team_id, run_id, call_id),
        FOREIGN KEY (team_id, run_id) REFERENCES run(team_id, run_id)
    )
    """,
    *_team_policies("pending_call", update=False, delete=True),
    """
    CREATE TABLE decision(
        team_id TEXT NOT NULL DEFAULT stockade.my_team(),
        actor_role TEXT NOT NULL DEFAULT current_user,
        run_id TEXT NOT NULL,
        call_id TEXT NOT NULL,
        decision TEXT NOT NULL CHECK (decision IN ('approved', 'denied')),
        actor TEXT NOT NULL CHECK (length(trim(actor)) > 0),
        reason TEXT,
        decided_ms BIGINT NOT NULL,
        PRIMARY KEY (team_id, run_id, call_id),
        FOREIGN KEY (team_id, run_id) REFERENCES run(team_id, run_id)
    )
    """,
    # The database decides who decided: the row names the connected role, and only an
    # approver may decide a run another role started.
    *_team_policies("decision", update=False, insert_check=_DECIDERS),
    f"GRANT SELECT ON run, pending_call, decision TO {READERS}",
    f"GRANT INSERT, UPDATE ON run TO {WRITERS}",
    f"GRANT INSERT, DELETE ON pending_call TO {WRITERS}",
    f"GRANT INSERT ON decision TO {WRITERS}",
)

_DECLINED = (
    """
    CREATE TABLE declined_proposal(
        team_id TEXT NOT NULL DEFAULT stockade.my_team() REFERENCES team(team_id),
        document_path TEXT NOT NULL,
        tool TEXT NOT NULL,
        input_digest TEXT NOT NULL,
        summary TEXT NOT NULL,
        target_kind TEXT CHECK (target_kind IS NULL OR target_kind IN ('element', 'flow')),
        target TEXT,
        category TEXT,
        title TEXT,
        title_key TEXT,
        reason TEXT,
        actor TEXT NOT NULL CHECK (length(trim(actor)) > 0),
        run_id TEXT NOT NULL,
        call_id TEXT NOT NULL,
        declined_ms BIGINT NOT NULL,
        PRIMARY KEY (team_id, document_path, tool, input_digest)
    )
    """,
    "CREATE INDEX declined_by_document ON declined_proposal(team_id, document_path, "
    "declined_ms)",
    # A memory, not a record: members may replace what the team declined on a document.
    *_team_policies("declined_proposal", update=False, delete=True),
    f"GRANT SELECT ON declined_proposal TO {READERS}",
    f"GRANT INSERT, DELETE ON declined_proposal TO {WRITERS}",
)

_SECURITY = (
    "ALTER TABLE decision ADD COLUMN input_digest TEXT, ADD COLUMN iteration INTEGER, "
    "ADD COLUMN event_seq BIGINT, ADD COLUMN mac TEXT",
    "ALTER TABLE pending_call ADD COLUMN iteration INTEGER",
    "ALTER TABLE run ADD COLUMN seal_version INTEGER NOT NULL DEFAULT 0 "
    "CHECK (seal_version >= 0)",
    "ALTER TABLE reservation ADD COLUMN overrun BIGINT NOT NULL DEFAULT 0 "
    "CHECK (overrun >= 0)",
    """
    CREATE TABLE change_summary(
        team_id TEXT NOT NULL DEFAULT stockade.my_team() REFERENCES team(team_id),
        event_seq BIGINT NOT NULL,
        run_id TEXT NOT NULL,
        sealed BYTEA NOT NULL,
        PRIMARY KEY (team_id, event_seq)
    )
    """,
    """
    CREATE FUNCTION change_summary_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN RAISE EXCEPTION 'change summaries are append-only'; END $$
    """,
    "CREATE TRIGGER change_summary_append_only BEFORE UPDATE OR DELETE ON change_summary "
    "FOR EACH ROW EXECUTE FUNCTION change_summary_append_only()",
    *_refuse_truncate("change_summary", "change summaries are append-only"),
    *_team_policies("change_summary", update=False),
    f"GRANT SELECT ON change_summary TO {READERS}",
    f"GRANT INSERT ON change_summary TO {WRITERS}",
    # A decision that did not authenticate is replaced in place (an UPDATE by the role that
    # now decides: the trigger makes it the row's actor, the policy checks it may decide).
    """
    CREATE FUNCTION decision_guard() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP = 'DELETE' THEN RAISE EXCEPTION 'decisions cannot be deleted'; END IF;
        IF NEW.team_id <> OLD.team_id OR NEW.run_id <> OLD.run_id
                OR NEW.call_id <> OLD.call_id THEN
            RAISE EXCEPTION 'a decision keeps its team, run and call';
        END IF;
        NEW.actor_role := current_user;  -- whoever replaces a decision is its actor
        RETURN NEW;
    END $$
    """,
    "CREATE TRIGGER decision_guard BEFORE UPDATE OR DELETE ON decision "
    "FOR EACH ROW EXECUTE FUNCTION decision_guard()",
    f"CREATE POLICY decision_update ON decision FOR UPDATE USING (team_id = {MY_TEAM}) "
    f"WITH CHECK (team_id = {MY_TEAM} AND {_DECIDERS})",
    f"GRANT UPDATE ON decision TO {WRITERS}",
    # The team's chain head and the first keyed event of its trail: what the SQLite store keeps
    # in a file beside the database and in the keyring, the team store keeps per team here,
    # written in the appending transaction (the head) or once (the marker: insert only).
    """
    CREATE TABLE chain_anchor(
        team_id TEXT PRIMARY KEY DEFAULT stockade.my_team() REFERENCES team(team_id),
        head TEXT NOT NULL
    )
    """,
    *_team_policies("chain_anchor"),
    f"GRANT SELECT ON chain_anchor TO {READERS}",
    f"GRANT INSERT, UPDATE ON chain_anchor TO {WRITERS}",
    """
    CREATE TABLE chain_marker(
        team_id TEXT PRIMARY KEY DEFAULT stockade.my_team() REFERENCES team(team_id),
        seq BIGINT NOT NULL,
        mac TEXT NOT NULL
    )
    """,
    *_team_policies("chain_marker", update=False),
    f"GRANT SELECT ON chain_marker TO {READERS}",
    f"GRANT INSERT ON chain_marker TO {WRITERS}",
)

MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "ledger", (*_TEAMS, *_LEDGER)),
    Migration(2, "trajectory", _TRAJECTORY),
    Migration(3, "runs", _RUNS),
    Migration(4, "declined proposals", _DECLINED),
    Migration(5, "security", _SECURITY),
)
"""The same versions as `stockade.store.migrations.MIGRATIONS`, in PostgreSQL's form."""
