"""Log lines name the flow and connector/task, also from threads a connector or store starts."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import pytest

from connect_runtime.logging_context import ContextFilter, carry_context, set_context


def _capture() -> tuple[logging.Logger, list[tuple[str, str]]]:
    seen: list[tuple[str, str]] = []

    class Handler(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append((record.flow, record.connector_task))  # type: ignore[attr-defined]

    handler = Handler()
    handler.addFilter(ContextFilter())
    logger = logging.getLogger(f"test-context-{id(seen)}")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    return logger, seen


def _in_thread(target: object) -> None:
    thread = threading.Thread(target=target)  # type: ignore[arg-type]
    thread.start()
    thread.join()


def test_a_carried_thread_logs_with_its_creators_flow_and_task_a_plain_one_does_not() -> None:
    logger, seen = _capture()

    def creator() -> None:
        set_context(flow="A->B", connector_task="MirrorSourceConnector-0")
        logger.info("on the creating thread")
        _in_thread(carry_context(lambda: logger.info("carried")))
        _in_thread(lambda: logger.info("not carried"))

    _in_thread(creator)
    assert seen == [("A->B", "MirrorSourceConnector-0"), ("A->B", "MirrorSourceConnector-0"), ("-", "-")]


def test_a_file_that_is_no_logging_config_is_refused_in_one_line(tmp_path: Path) -> None:
    """configparser quotes the offending line on lines of its own: the CLI splits a ConfigError into one
    finding per line, so the message must stay one line (found by tests/fuzz/test_fuzz_cli_flags.py)."""
    from connect_runtime.api.errors import ConfigError
    from connect_runtime.logging_setup import configure_logging

    path = tmp_path / "mm2.properties"
    path.write_text("clusters = A, B\n")
    with pytest.raises(ConfigError) as refused:
        configure_logging(None, str(path))
    message = str(refused.value)
    assert "\n" not in message and message.startswith(f"{path}: invalid logging config: ")
