"""An algorithm and its parameters from ``--algo``, ``--preset``, ``--config`` and ``--set``.

:func:`resolve_algorithm` turns what a user typed (or a TOML file says) into a
registered algorithm name and its full, checked parameters; every command and
the library use it, so precedence and messages are the same everywhere.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

__all__ = ["DEFAULT_ALGO", "ConfigError", "load_config", "resolve_algorithm"]

DEFAULT_ALGO = "olkn"


class ConfigError(ValueError):
    """A bad algorithm, parameter, config file or option; the message says what to fix."""


def load_config(path: str | os.PathLike) -> dict[str, Any]:
    """Read a TOML run configuration.

    Accepted keys: ``algo = "olkn"``, ``preset = "NAME"``, a ``[params]`` table,
    and tables named after algorithms (``[olkn]``, ``[knn]``...) whose values
    apply when that algorithm runs.

    Raises
    ------
    ConfigError
        When the file is missing or not valid TOML.
    """
    path = Path(path)
    if path.is_dir():
        raise ConfigError(f"config file {path} is a folder; give a TOML file")
    if not path.is_file():
        raise ConfigError(f"config file {path} does not exist" if not path.exists() else
                          f"config file {path} is not a regular file; give a TOML file")
    try:
        import tomllib  # Python >= 3.11
    except ModuleNotFoundError:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: it is not UTF-8 text (byte {exc.start}); save it as "
                          "UTF-8") from None
    except RecursionError:
        raise ConfigError(f"{path} is not valid TOML: it nests too deeply") from None
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
    return data


def resolve_algorithm(
    algo: str | None = None,
    assignments: list[str] | None = None,
    config: str | os.PathLike | None = None,
    preset: str | None = None,
) -> tuple[str, dict[str, Any]]:
    """The algorithm name and its full, checked parameters.

    Precedence (later wins): the algorithm's defaults, the preset, the config
    file's values, ``--set`` assignments. ``algo`` (``--algo``) beats the config
    file's ``algo``.

    Raises
    ------
    ConfigError
        With the reason (unknown algorithm or parameter, value out of range...).
    """
    from bgsub.registry import algorithms, create, default_params, parse_assignments, validate_params

    data: dict[str, Any] = {}
    if config is not None:
        data = load_config(config)
    name = algo or data.get("algo") or DEFAULT_ALGO
    if not isinstance(name, str):
        raise ConfigError(f"'algo' must be a name such as \"olkn\", got {name!r}")
    known = algorithms()
    if name not in known:
        raise ConfigError(f"unknown algorithm {name!r}; choose one of {', '.join(known)}")
    preset = preset or data.get("preset")
    try:
        params = default_params(name, preset)
        from_file: dict[str, Any] = {}
        for table in ("params", name):
            values = data.get(table, {})
            if not isinstance(values, dict):
                raise ConfigError(f"[{table}] in {config} must be a table of parameter values")
            from_file.update(values)
        if from_file:
            try:
                params.update(validate_params(name, from_file))
            except ValueError as exc:
                raise ConfigError(f"{config}: {exc}") from None
        params.update(parse_assignments(name, assignments))
        create(name, **params)  # parameters that are fine alone but not together (e.g. C <= nu)
    except ConfigError:
        raise
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    return name, params
