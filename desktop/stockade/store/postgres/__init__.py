"""The team store on PostgreSQL (psycopg 3): teams, roles, row-level security (see DESIGN.md).

Import the submodules (`database`, `target`, `team`, `schema`, `chain`); only `database` and
`team` load psycopg, so naming a team database or describing it costs a SQLite user nothing.
"""
