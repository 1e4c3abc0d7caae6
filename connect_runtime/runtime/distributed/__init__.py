"""The distributed herder and its parts: the tick thread, requests, local work, restarts, reconfiguration,
and the wiring of a distributed worker (:mod:`.assembly`). The top layer of the runtime."""
