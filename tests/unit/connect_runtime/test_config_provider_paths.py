"""Issue 27, item 5: the file and directory config providers honour ``allowed.paths`` (resolved
canonically: ``..`` and symbolic links cannot leave it) and the directory provider refuses keys that
are not file names in its directory. Before: ``allowed.paths`` was ignored and ``../`` or absolute keys
read any file the process could."""

from __future__ import annotations

from pathlib import Path

import pytest

from connect_runtime.api.config_provider import ConfigProvider, build_providers, resolve
from connect_runtime.api.errors import ConfigError

FILE = "org.apache.kafka.common.config.provider.FileConfigProvider"
DIRECTORY = "org.apache.kafka.common.config.provider.DirectoryConfigProvider"


@pytest.fixture
def layout(tmp_path: Path) -> dict[str, Path]:
    allowed, outside = tmp_path / "allowed", tmp_path / "outside"
    (allowed / "secrets").mkdir(parents=True)
    outside.mkdir()
    (allowed / "secrets" / "password").write_text("in-bounds")
    (allowed / "app.properties").write_text("password = in-bounds\n")
    (outside / "password").write_text("OUT-OF-BOUNDS")
    (outside / "app.properties").write_text("password = OUT-OF-BOUNDS\n")
    (allowed / "escape").symlink_to(outside)
    (allowed / "secrets" / "link").symlink_to(outside / "password")
    return {"allowed": allowed, "outside": outside}


def providers(allowed: Path | None) -> dict[str, ConfigProvider]:
    config = {"config.providers": "file,directory", "config.providers.file.class": FILE,
              "config.providers.directory.class": DIRECTORY}
    if allowed is not None:
        config["config.providers.file.param.allowed.paths"] = str(allowed)
        config["config.providers.directory.param.allowed.paths"] = f"{allowed}, /nonexistent/other"
    return build_providers(config)


def test_paths_inside_allowed_paths_resolve(layout: dict[str, Path]) -> None:
    allowed = layout["allowed"]
    resolved = resolve({"a": f"${{file:{allowed}/app.properties:password}}",
                        "b": f"${{directory:{allowed}/secrets:password}}",
                        "c": f"${{file:{allowed}/secrets/../app.properties:password}}"},
                       providers(allowed))
    assert resolved == {"a": "in-bounds", "b": "in-bounds", "c": "in-bounds"}


@pytest.mark.parametrize("placeholder", [
    "${file:{outside}/app.properties:password}",
    "${file:{allowed}/../outside/app.properties:password}",
    "${file:{allowed}/escape/app.properties:password}",  # a symbolic link out of the allowed path
    "${directory:{outside}:password}",
    "${directory:{allowed}/../outside:password}",
    "${directory:{allowed}/escape:password}",
])
def test_paths_outside_allowed_paths_are_refused(layout: dict[str, Path], placeholder: str) -> None:
    value = placeholder.replace("{outside}", str(layout["outside"])).replace("{allowed}", str(layout["allowed"]))
    with pytest.raises(ConfigError, match=r"outside its allowed\.paths"):
        resolve({"k": value}, providers(layout["allowed"]))


@pytest.mark.parametrize("key", ["../../outside/password", "{outside}/password", "..", "sub/password", "link"])
@pytest.mark.parametrize("restricted", [True, False])
def test_directory_keys_cannot_leave_the_directory(layout: dict[str, Path], key: str, restricted: bool) -> None:
    key = key.replace("{outside}", str(layout["outside"]))
    value = f"${{directory:{layout['allowed']}/secrets:{key}}}"
    with pytest.raises(ConfigError) as refused:
        resolve({"k": value}, providers(layout["allowed"] if restricted else None))
    assert "OUT-OF-BOUNDS" not in str(refused.value)


def test_allowed_paths_must_be_absolute() -> None:
    with pytest.raises(ConfigError, match="not an absolute path"):
        build_providers({"config.providers": "file", "config.providers.file.class": FILE,
                         "config.providers.file.param.allowed.paths": "relative/dir"})
