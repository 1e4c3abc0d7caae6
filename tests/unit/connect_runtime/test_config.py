"""ConfigDef parsing (Kafka parseType semantics), config providers, redaction and the properties loader."""

from __future__ import annotations

from pathlib import Path

import pytest

from connect_runtime.api.config import (
    HIDDEN,
    ConfigDef,
    ConfigKey,
    Password,
    Type,
    at_least,
    is_sensitive_key,
    one_of,
    parse_value,
    redact,
    regex_list,
)
from connect_runtime.api.config_provider import (
    EnvVarConfigProvider,
    FileConfigProvider,
    build_providers,
    resolve,
)
from connect_runtime.api.errors import ConfigError
from connect_runtime.api.properties import load_properties, parse_properties

# ---- parseType semantics ----


@pytest.mark.parametrize("raw", ["true", "TRUE", " True ", "tRuE\t"])
def test_boolean_accepts_any_case_and_is_trimmed(raw: str) -> None:
    assert parse_value("k", Type.BOOLEAN, raw) is True


@pytest.mark.parametrize("raw", ["yes", "1", "", "t"])
def test_boolean_rejects_anything_else(raw: str) -> None:
    with pytest.raises(ConfigError, match="expected true or false"):
        parse_value("k", Type.BOOLEAN, raw)


def test_list_splits_on_commas_with_surrounding_whitespace() -> None:
    assert parse_value("k", Type.LIST, " a , b,c ") == ["a", "b", "c"]
    assert parse_value("k", Type.LIST, "   ") == []
    assert parse_value("k", Type.LIST, "a") == ["a"]


def test_int_and_long_ranges() -> None:
    assert parse_value("k", Type.INT, " 42 ") == 42
    assert parse_value("k", Type.LONG, str(2**40)) == 2**40
    with pytest.raises(ConfigError, match="out of range"):
        parse_value("k", Type.INT, str(2**31))
    with pytest.raises(ConfigError, match="expected an integer"):
        parse_value("k", Type.LONG, "1e3")


def test_string_values_are_trimmed_and_passwords_hidden() -> None:
    assert parse_value("k", Type.STRING, "  v  ") == "v"
    secret = parse_value("k", Type.PASSWORD, "pw")
    assert isinstance(secret, Password)
    assert secret.value() == "pw" and str(secret) == HIDDEN and repr(secret) == HIDDEN


def test_parse_applies_defaults_validators_and_required() -> None:
    definition = ConfigDef([
        ConfigKey("req", Type.STRING),
        ConfigKey("n", Type.INT, 5, validator=at_least(1)),
        ConfigKey("mode", Type.STRING, "a", validator=one_of("a", "b")),
        ConfigKey("patterns", Type.LIST, ".*", validator=regex_list),
    ])
    assert definition.parse({"req": "x", "unknown": "ignored"}) == {
        "req": "x", "n": 5, "mode": "a", "patterns": [".*"]}
    with pytest.raises(ConfigError) as err:
        definition.parse({})
    assert err.value.key == "req"
    with pytest.raises(ConfigError, match="at least 1"):
        definition.parse({"req": "x", "n": "0"})
    with pytest.raises(ConfigError, match="expected one of a, b"):
        definition.parse({"req": "x", "mode": "c"})
    with pytest.raises(ConfigError, match="not a valid regular expression"):
        definition.parse({"req": "x", "patterns": "ok, (bad"})


def test_validate_collects_every_error() -> None:
    definition = ConfigDef([ConfigKey("a", Type.INT), ConfigKey("b", Type.BOOLEAN, False)])
    results = definition.validate({"b": "maybe"})
    assert results["a"].errors and results["b"].errors


def test_list_defaults_given_as_strings_render_unchanged_in_docs() -> None:
    definition = ConfigDef([ConfigKey("l", Type.LIST, "x, y")])
    assert "`x, y`" in definition.to_markdown()


# ---- redaction ----


@pytest.mark.parametrize("key", [
    "sasl.jaas.config", "ssl.keystore.password", "A.ssl.key.password", "source.cluster.sasl.jaas.config",
    "producer.ssl.truststore.password", "ssl.keystore.key", "config.providers.vault.param.token",
])
def test_sensitive_keys_are_recognised(key: str) -> None:
    assert is_sensitive_key(key)


@pytest.mark.parametrize("key", ["key.converter", "bootstrap.servers", "ssl.keystore.location",
                                 "sasl.mechanism"])
def test_ordinary_keys_are_not_sensitive(key: str) -> None:
    assert not is_sensitive_key(key)


def test_redact_hides_only_sensitive_values() -> None:
    assert redact({"sasl.jaas.config": "x", "bootstrap.servers": "b:1", "ssl.key.password": None}) == {
        "sasl.jaas.config": HIDDEN, "bootstrap.servers": "b:1", "ssl.key.password": None}


# ---- providers ----


def test_env_provider_resolves_placeholders(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CR_TEST_USER", "alice")
    providers = build_providers({"config.providers": "env",
                                 "config.providers.env.class":
                                     "org.apache.kafka.common.config.provider.EnvVarConfigProvider"})
    assert isinstance(providers["env"], EnvVarConfigProvider)
    resolved = resolve({"u": "user=${env:CR_TEST_USER};", "other": "${vault:x:y}", "n": "1"}, providers)
    assert resolved == {"u": "user=alice;", "other": "${vault:x:y}", "n": "1"}


def test_env_provider_allowlist_and_missing_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CR_TEST_SECRET", "s")
    providers = build_providers({"config.providers": "env",
                                 "config.providers.env.class": "EnvVarConfigProvider",
                                 "config.providers.env.param.allowlist.pattern": "ALLOWED_.*"})
    with pytest.raises(ConfigError, match="has no value for 'CR_TEST_SECRET'") as err:
        resolve({"p": "${env:CR_TEST_SECRET}"}, providers)
    assert err.value.key == "p"


def test_file_provider_reads_a_properties_file(tmp_path: Path) -> None:
    secrets = tmp_path / "secrets.properties"
    secrets.write_text("db.password = hunter2\n", encoding="utf-8")
    providers = build_providers({"config.providers": "file",
                                 "config.providers.file.class":
                                     "org.apache.kafka.common.config.provider.FileConfigProvider"})
    assert isinstance(providers["file"], FileConfigProvider)
    assert resolve({"p": f"${{file:{secrets}:db.password}}"}, providers) == {"p": "hunter2"}
    with pytest.raises(ConfigError, match="cannot read"):
        resolve({"p": f"${{file:{tmp_path / 'missing'}:k}}"}, providers)


def test_provider_without_class_is_an_error() -> None:
    with pytest.raises(ConfigError, match=r"config.providers.env.class") as err:
        build_providers({"config.providers": "env"})
    assert err.value.key == "config.providers.env.class"


def test_provider_with_unknown_class_is_an_error() -> None:
    with pytest.raises(ConfigError, match="could not be found"):
        build_providers({"config.providers": "x", "config.providers.x.class": "no.such.Provider"})


# ---- properties files ----


def test_properties_follow_java_rules_and_keep_line_numbers() -> None:
    text = "# comment\n! also a comment\n\na = 1 \nb: x # not a comment\nc \\\n  continued\nd=\\u0041\ne\tf\n"
    props = parse_properties(text, "f.properties")
    assert dict(props) == {"a": "1 ", "b": "x # not a comment", "c": "continued", "d": "A", "e": "f"}
    assert props.lines == {"a": 4, "b": 5, "c": 6, "d": 8, "e": 9}
    assert props.location("d") == "f.properties:8"
    assert props.location("zzz") == "f.properties"


def test_last_definition_wins_with_its_line() -> None:
    props = parse_properties("k = 1\nk = 2\n", "f")
    assert props["k"] == "2" and props.line_of("k") == 2


def test_every_definition_is_kept_in_file_order_with_its_line() -> None:
    """What a check needs to name an overridden line (issue 26): entries keep duplicates."""
    props = parse_properties("k = 1\n# c\nj = \\\n  x\nk = 2\n", "f")
    assert props.entries == (("k", 1), ("j", 3), ("k", 5))


def test_crlf_line_endings_count_once() -> None:
    assert parse_properties("a=1\r\nb=2\r\n").lines == {"a": 1, "b": 2}


def test_load_properties_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"missing.properties: file not found"):
        load_properties(tmp_path / "missing.properties")


def test_load_properties_reads_utf8_and_falls_back_to_latin1(tmp_path: Path) -> None:
    utf8 = tmp_path / "u.properties"
    utf8.write_bytes("name = caf\u00e9\n".encode())
    latin1 = tmp_path / "l.properties"
    latin1.write_bytes("name = caf\u00e9\n".encode("latin-1"))
    assert load_properties(utf8)["name"] == "caf\u00e9"
    assert load_properties(latin1)["name"] == "caf\u00e9"


def test_load_properties_directory(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="is a directory"):
        load_properties(tmp_path)
