"""Assistant panes: the chat, approvals, settings, the audit viewer and their controller."""
