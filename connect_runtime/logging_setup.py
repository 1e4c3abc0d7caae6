"""Process logging for the command-line tools (``connect-distributed``, ``connect-mirror-maker``, ``mirror``).

One implementation for every entry point: ``--log-config`` (a YAML dictConfig such as
``etc/logging.yaml``, or an .ini fileConfig) or basic logging; ``--log-level`` always wins for the root
logger, so operators can turn on DEBUG without editing files. Basic logging shows each line's flow and
connector/task too (:mod:`connect_runtime.logging_context`).
"""

from __future__ import annotations

import argparse
import logging
import logging.config
import sys
from pathlib import Path

from connect_runtime.api.errors import ConfigError
from connect_runtime.api.secrets import SecretScrubbingFilter, scrub_every_log_record
from connect_runtime.logging_context import ContextFilter

LOG_FORMAT = "%(asctime)s %(levelname)s [%(flow)s %(connector_task)s] %(name)s: %(message)s"
LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
#: Third-party loggers kept at WARNING unless a log level or config file says otherwise: kafka-python
#: and uvicorn log every connection at INFO; librdkafka notices are rarely useful.
QUIET_LOGGERS = ("kafka", "librdkafka", "uvicorn", "uvicorn.error", "uvicorn.access", "httpx", "py4j")
#: ...except kafka-python's group membership: joins, coordinator changes and rebalances, one line each
#: (as Java's AbstractCoordinator logs them), so a rebalance that does not complete shows why.
MEMBERSHIP_LOGGER = "kafka.coordinator"


def log_level(value: str) -> str:
    """argparse type for a logging level name, any case."""
    level = value.strip().upper()
    if level not in LEVELS:
        raise argparse.ArgumentTypeError(f"expected DEBUG, INFO, WARNING, ERROR or CRITICAL, got {value!r}")
    return level


def configure_logging(level: str | None, config_path: str | None, default_config: Path | None = None) -> None:
    """Apply ``config_path`` (else ``default_config`` if that file exists) or basic logging at ``level``.

    Raises ConfigError naming the file when it cannot be read or is not a valid logging config.
    """
    path = Path(config_path) if config_path else None
    if path is None and default_config is not None and default_config.is_file():
        path = default_config
    if path is None:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter(LOG_FORMAT))
        handler.addFilter(ContextFilter())
        root = logging.getLogger()
        root.handlers[:] = [handler]
        root.setLevel(level or "INFO")
        if level is None:
            for noisy in QUIET_LOGGERS:
                logging.getLogger(noisy).setLevel(logging.WARNING)
            logging.getLogger(MEMBERSHIP_LOGGER).setLevel(logging.INFO)
        scrub_secrets_in_handlers()
        return
    try:
        if path.suffix in (".yaml", ".yml", ".json"):
            import yaml

            with path.open(encoding="utf-8") as fh:
                logging.config.dictConfig(yaml.safe_load(fh))
        else:
            logging.config.fileConfig(path, disable_existing_loggers=False)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read logging config: {exc.strerror or exc}") from exc
    except Exception as exc:  # yaml.YAMLError and configparser errors have no common base
        # one line: configparser quotes the offending line on lines of its own
        raise ConfigError(f"{path}: invalid logging config: {' '.join(str(exc).split())}") from exc
    if level:
        logging.getLogger().setLevel(level)
    scrub_secrets_in_handlers()


def scrub_secrets_in_handlers() -> None:
    """Put the secret scrubber on every handler configured so far, whatever the logging config says:
    no known secret value reaches a log line (:mod:`connect_runtime.api.secrets`). Records are also
    scrubbed as they are created, which covers handlers added after this call."""
    scrub_every_log_record()
    loggers = [logging.getLogger(), *(lg for lg in logging.Logger.manager.loggerDict.values()
                                      if isinstance(lg, logging.Logger))]
    for lg in loggers:
        for handler in lg.handlers:
            if not any(isinstance(f, SecretScrubbingFilter) for f in handler.filters):
                handler.addFilter(SecretScrubbingFilter())
