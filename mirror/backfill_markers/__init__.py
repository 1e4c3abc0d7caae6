"""The backfill hand-over markers: the record format and the log that the source connector and the backfill share.

The source connector/task and the backfill command never import each other: they coordinate only
through this topic (who may write a remote partition, where streaming resumes, which tasks still hold a
partition), so its format and its reader live below both.
"""
