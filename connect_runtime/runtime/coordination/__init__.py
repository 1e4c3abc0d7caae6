"""Distributed Connect group membership: the membership seam, the incremental cooperative assignor, and
membership through Kafka's group coordinator (protocol type ``connect``)."""
