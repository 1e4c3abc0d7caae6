"""Issue 27: the MM2 driver's own connector configs, built from mm2.properties, keep every file they name.

The driver writes its configs straight to its herders, not through REST, so the REST file rule
(``rest.allowed.paths``, :mod:`connect_runtime.api.path_allowlist`) never sees them; a REST caller who
PUTs one of them back through a flow's REST API must get the same answer as the file. Checked with the
REST security the driver itself builds (``mirror.maker.rest_wiring.rest_security``).
"""

from __future__ import annotations

import re

import pytest

from connect_runtime.api import path_allowlist
from connect_runtime.api.errors import ConfigError
from connect_runtime.api.properties import parse_properties
from connect_runtime.clients import librdkafka_properties as props_table
from mirror.config.client_keys import CLIENT_CONFIG_NAMES
from mirror.config.mirror_maker_config import CONNECTOR_CLASSES, MirrorMakerConfig, SourceAndTarget
from mirror.maker.rest_wiring import rest_security

PAIR = SourceAndTarget("A", "B")
MM2 = """clusters = A, B
A->B.enabled = true
A.bootstrap.servers = a:9092
B.bootstrap.servers = b:9092
A.security.protocol = SASL_SSL
A.sasl.mechanism = GSSAPI
A.sasl.jaas.config = com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true \\
  keyTab="/etc/security/keytabs/mm2.keytab" principal="mm2@EXAMPLE.COM";
A.ssl.truststore.location = /etc/kafka/a-truststore.jks
B.security.protocol = SSL
B.ssl.keystore.location = /etc/kafka/b-keystore.p12
B.ssl.truststore.location = /etc/kafka/b-truststore.pem
A->B.producer.override.ssl.ca.location = /etc/kafka/flow-ca.pem
"""


def test_the_drivers_connector_configs_pass_the_rest_file_rule() -> None:
    config = MirrorMakerConfig(parse_properties(MM2, "mm2.properties"))
    policy = rest_security(config, "http://127.0.0.1:0").path_policy
    assert policy is not None and policy.directories == ()  # rest.allowed.paths unset: nothing but the file
    named = 0
    for connector_class in CONNECTOR_CLASSES:
        for built in (config.connector_stored_config(PAIR, connector_class),
                      config.connector_base_config(PAIR, connector_class)):
            path_allowlist.check(built, policy)  # raises ConfigError naming a refused key
            named += sum(len(path_allowlist.named_paths(k, v)) for k, v in built.items())
    assert named > 0  # the configs do name files: the check above had something to accept
    source = config.connector_stored_config(PAIR, CONNECTOR_CLASSES[0])
    moved = {**source, "source.cluster.ssl.truststore.location": "/etc/passwd"}
    with pytest.raises(ConfigError, match=r"source\.cluster\.ssl\.truststore\.location"):
        path_allowlist.check(moved, policy)


def test_every_declared_client_key_that_names_a_file_is_in_the_catalogue() -> None:
    """A client key added later whose name says it holds a path (Java's declared keys, librdkafka's
    table) must be added to the rule's catalogue, or it would let a REST caller name a file."""
    declared = (CLIENT_CONFIG_NAMES | props_table.COMMON | props_table.CONSUMER_ONLY | props_table.PRODUCER_ONLY)
    path_like = {k for k in declared if re.search(r"\.(location|keytab|file|path|paths|cmd)$", k)}
    assert path_like <= path_allowlist.DATA_FILE_KEYS | path_allowlist.CODE_FILE_KEYS, path_like
    assert "ssl.truststore.location" in path_like and "plugin.library.paths" in path_like  # the scan finds keys
