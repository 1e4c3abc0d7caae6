"""Single message transformations and predicates (Connect's SMTs) for records copied as bytes.

:mod:`.chain` holds the config model and the chain a task's records go through, :mod:`.builtin` the
built-ins, :mod:`.registry` how a configured class name is found, :mod:`.base` the shapes a custom
Python transformation or predicate has.
"""

from connect_runtime.api.transforms.base import Predicate, Transformation
from connect_runtime.api.transforms.chain import TransformationChain, TransformError, build_chain, validate_chain
from connect_runtime.api.transforms.registry import PREDICATES, TRANSFORMATIONS

__all__ = ["PREDICATES", "TRANSFORMATIONS", "Predicate", "TransformError", "Transformation",
           "TransformationChain", "build_chain", "validate_chain"]
