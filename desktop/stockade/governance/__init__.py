"""Governance: price book, meter and ledger, audit trajectory, run state, guards, and the hooks
that put them around the turn runner. Front ends reach it through `stockade.assistant`."""
