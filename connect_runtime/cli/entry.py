"""The console scripts' entry points: import the command, run it, and say in one line what stops it starting.

A command's module imports the Kafka client libraries, whose releases are checked at import
(connect_runtime/clients/versions.py). Raised there, that check would reach the operator as a traceback
printed by the console script's own import; here it is one ``error:`` line and exit code 3 (failed to
start), as every start failure is (connect_runtime/cli/process.py).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import cast

#: The exit code of a command that could not start (connect_runtime.cli.process.ExitCode.START_FAILURE, not
#: imported here: that module imports the clients whose check this guards).
START_FAILURE = 3


def run_entry(target: str) -> int:
    """Import ``module:function`` and return what the function returns; an unsupported client library is one
    error line and :data:`START_FAILURE`."""
    module_name, _, function = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        if not getattr(exc, "unsupported_client_library", False):
            raise
        print(f"error: failed to start: {exc}", file=sys.stderr)
        return START_FAILURE
    return cast(Callable[[], int], getattr(module, function))()


def connect_distributed() -> int:
    """``connect-distributed``."""
    return run_entry("connect_runtime.cli.connect_distributed:main")
