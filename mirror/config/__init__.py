"""The configuration model of MirrorMaker 2: ``mm2.properties`` and the three connectors' configs.

A leaf below every connector and the driver: each of them reads its keys from here and nothing here
reads them back, so the driver can derive connector configs and ``mirror config docs`` can render every
ConfigDef without importing a connector. Only :mod:`mirror.client` (replication policies) and the
runtime's API are below it.
"""
