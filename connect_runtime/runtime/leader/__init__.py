"""What only the group leader does, and how followers hand it work: writing the config topic, fencing
exactly-once task generations, forwarding task configs, and reporting hand-offs that stalled."""
