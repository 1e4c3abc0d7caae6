"""``mirror check``'s pre-flight: will the flows of an mm2.properties work against these clusters?

Read-only against a live fleet: nothing here produces to a topic, initialises a transactional id, joins a
group or changes a config. Rights are read through KIP-430's authorized operations and DescribeAcls, and
tried with operations that change nothing (``validate_only`` creates and alters) where neither answers.
"""
