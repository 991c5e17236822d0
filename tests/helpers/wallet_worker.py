"""One analyst's process hammering a team wallet: reserve, then settle or refund, until the time
is up and it has been refused once; prints one JSON line with what it did for the concurrency
test.

`python -m tests.helpers.wallet_worker URL SECONDS SEED` reserves random amounts through the
real `Ledger` over the team store, settles each hold at a random usage (sometimes above the
hold, which the ledger caps, sometimes a failure, which refunds), and inside each granted
reservation's own transaction reads what the team and this analyst have committed, so the
test can check that no committed state ever exceeded a limit.
"""

from __future__ import annotations

import json
import random
import sys
import time

from stockade.governance.ledger import CreditBudgets, Hold, Ledger
from stockade.store import reservations as sql
from stockade.store.postgres.database import open_postgres
from stockade.store.postgres.target import parse_database_url

FIXED_NOW_MS = 1_796_040_000_000  # one window for the whole run, whatever the wall clock says


def main(argv: list[str]) -> int:
    url, seconds, seed = argv[0], float(argv[1]), int(argv[2])
    rng = random.Random(seed)
    db = open_postgres(parse_database_url(url))
    ledger = Ledger(db, lambda: FIXED_NOW_MS)
    budgets = CreditBudgets(per_turn=10**9)
    day, month = "2026-11-30", "2026-11"
    granted = refused = settled = 0
    max_team = max_mine = 0
    started = time.monotonic()
    deadline = started + seconds
    # Past the time, go on until this process has been refused once: settled credits stay
    # committed for the day, so the wallet fills and a refusal comes, however slowly a loaded
    # machine lets eight processes start. The hard stop only guards against a hang.
    hard_stop = started + seconds + 60
    run = f"run-{seed}"
    while (now := time.monotonic()) < deadline or (refused == 0 and now < hard_stop):
        credits = rng.randint(1, 60)
        with db.write() as conn:
            outcome = ledger.reserve_in(conn, run_id=run, provider="anthropic", model="m",
                                        credits=credits, estimated=credits, budgets=budgets)
            if isinstance(outcome, Hold):
                # Still inside the team's serialized transaction: the committed state as of
                # this commit.
                max_team = max(max_team, sql.committed_for_day(conn, day))
                max_mine = max(max_mine, db.committed_by_me(conn, day_key=day,
                                                            month_key=month)[0])
        if not isinstance(outcome, Hold):
            refused += 1
            # The wallet is full: settle nothing, let the others' holds close.
            time.sleep(0.002)
            continue
        granted += 1
        roll = rng.random()
        if roll < 0.15:
            ledger.settle(outcome.id, actual=None, failed=True)
        else:
            ledger.settle(outcome.id, actual=rng.randint(0, credits + 10))
        settled += 1
    db.close()
    print(json.dumps({"granted": granted, "refused": refused, "settled": settled,
                      "max_team": max_team, "max_mine": max_mine}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
