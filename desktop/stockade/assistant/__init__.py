"""The application layer: the one turn API the app and the command line use (Qt-free)."""
