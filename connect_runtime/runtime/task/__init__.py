"""A running source task: the task thread, its record and bulk paths, offset commits, error tolerance,
transforms, exactly-once transactions and KIP-558 topic tracking. The bottom layer above the shared
interfaces (:mod:`connect_runtime.runtime.herder`, :mod:`~connect_runtime.runtime.status`)."""
