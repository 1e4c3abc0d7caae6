"""The root of MirrorMaker 2's own exceptions: ``except MirrorError`` catches every failure MM2 defines.

It sits below every other module of :mod:`mirror`, :mod:`mirror.client` included, and imports nothing, so
the client library keeps working without the runtime. Each error also keeps the built-in base callers
already catch (``ValueError`` for bad input, ``RuntimeError`` for a failed operation). Errors the runtime
must recognise are raised as the runtime's own (``ConnectError``, ``ConfigError`` from
:mod:`connect_runtime.api.errors`); a mirror error that must also be one of those derives from both.
"""

from __future__ import annotations


class MirrorError(Exception):
    """Root of every exception class defined in :mod:`mirror`."""
