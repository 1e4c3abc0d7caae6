"""One worker process: its plugins, the connectors and tasks it runs, the status it writes, and
process-level concerns (metrics, memory trimming, logger levels, connector config validation)."""
