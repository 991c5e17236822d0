"""Shared test helpers: fake provider servers, the in-memory keyring, document builders."""
