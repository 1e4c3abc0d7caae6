"""One worker process: its plugins, the connectors and tasks it runs, the status it writes, its logger
levels and connector config validation."""
