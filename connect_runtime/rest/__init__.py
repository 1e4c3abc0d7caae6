"""The Kafka-Connect-compatible REST API and the KIP-710 internal endpoints.

``create_app`` builds the Starlette app for one herder (at the root) or many (each under its
namespace); ``RestServer`` serves it with uvicorn on a background thread.
"""

from connect_runtime.rest.app import create_app, encode_namespace_element, namespace_path
from connect_runtime.rest.server import RestServer

__all__ = ["RestServer", "create_app", "encode_namespace_element", "namespace_path"]
