"""The one place that touches the Kafka client libraries (confluent-kafka, kafka-python, librdkafka).

Importing it checks that the installed confluent-kafka is a tested release (:mod:`.versions`).
"""

from connect_runtime.clients.versions import check_confluent_kafka

check_confluent_kafka()
