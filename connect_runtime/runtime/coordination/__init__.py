"""Distributed Connect group membership through Kafka's group coordinator (protocol type ``connect``)."""

from connect_runtime.runtime.coordination.kafka_membership import KafkaGroupMembership
from connect_runtime.runtime.coordination.kafka_python_adapter import kafka_python_config

__all__ = ["KafkaGroupMembership", "kafka_python_config"]
