"""Reading scenarios: files or built-in names, ``--set`` overrides, one-line errors, matrices.

Contract
--------
* :func:`load_scenario` takes a built-in name (``herd``) or a path to a TOML file, applies
  ``key=value`` overrides (dotted keys, TOML values: ``group.members=5``, ``implementations=["legacy_zk"]``;
  a value that is not TOML is taken as a string) and returns a validated :class:`Scenario`.
* Every problem raises :class:`harness.kernel.errors.ConfigError` whose message is one line naming the file,
  the key, the value and what was expected: list entries counted from 1 (``timeline entry 2, at``), the
  line of the file that sets the key where it can be found (:mod:`.positions`), and for an unknown key
  or action the closest allowed one (``did you mean 'count'?``).
* :func:`expand` turns a scenario into its matrix cases: one :class:`Case` per combination of the list
  values of ``group.members`` and of the ``[matrix]`` keys, in a stable order.
"""

from __future__ import annotations

import copy
import difflib
import itertools
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from types import UnionType
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from harness.kernel.errors import ConfigError
from harness.scenario.model import Scenario
from harness.scenario.positions import key_lines, line_of
from harness.scenario.processing import processing_gap_s
from harness.scenario.properties import client_cannot_run

BUILTIN_PACKAGE = "harness.scenario"
BUILTIN_DIR = "builtin"


def builtin_names() -> list[str]:
    """Names of the scenarios shipped with herdlab."""
    root = resources.files(BUILTIN_PACKAGE).joinpath(BUILTIN_DIR)
    return sorted(p.name.removesuffix(".toml") for p in root.iterdir() if p.name.endswith(".toml"))


def builtin_text(name: str) -> str:
    return resources.files(BUILTIN_PACKAGE).joinpath(BUILTIN_DIR, f"{name}.toml").read_text()


def parse_override(item: str) -> tuple[list[str], Any]:
    """``"group.members=5"`` -> (["group", "members"], 5). The key is a TOML key, so a part holding dots
    is quoted (``matrix."cluster.broker"=["herdlab","tansu"]``). Values are TOML, else strings."""
    if "=" not in item:
        raise ConfigError(f"--set {item!r}: expected KEY=VALUE, e.g. group.members=5")
    key, raw = _split_key(item)
    path = _key_path(key)
    if path is None:
        raise ConfigError(f"--set {item!r}: the key must be dotted names, e.g. group.members")
    try:
        value = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw
    return path, value


def _split_key(item: str) -> tuple[str, str]:
    """KEY and VALUE of ``KEY=VALUE``: the first ``=`` outside a quoted key part."""
    quote = None
    for i, ch in enumerate(item):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch == "=":
            return item[:i].strip(), item[i + 1 :]
    return item.strip(), ""


def _key_path(key: str) -> list[str] | None:
    """The parts of a TOML dotted key (``a."b.c"`` -> ["a", "b.c"]), None when it is not one."""
    if not key:
        return None
    try:
        node: Any = tomllib.loads(f"{key} = 0")
    except tomllib.TOMLDecodeError:
        return None
    path = []
    while isinstance(node, dict) and len(node) == 1:
        (part, node) = next(iter(node.items()))
        if not part:
            return None
        path.append(part)
    return path if node == 0 else None


def _apply_override(data: dict[str, Any], path: list[str], value: Any) -> None:
    node = data
    for i, part in enumerate(path[:-1]):
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise ConfigError(f"--set {'.'.join(path)}: {'.'.join(path[: i + 1])} is not a table")
        node = child
    node[path[-1]] = value


def _models(annotation: Any) -> list[type[BaseModel]]:
    """The pydantic models an annotation admits (through ``Annotated``, unions, ``X | None``)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    origin = get_origin(annotation)
    if origin is Annotated:
        return _models(get_args(annotation)[0])
    if origin in (Union, UnionType):
        return [m for a in get_args(annotation) for m in _models(a)]
    return []


def _model_at(loc: Sequence[Any], data: Any) -> type[BaseModel] | None:
    """The model of the table at ``loc`` in the scenario ``data``: a list entry's model is picked by its
    tag (``action``, ``kind``) when the list holds several. None when it cannot be told."""
    model: type[BaseModel] = Scenario
    node = data
    annotation: Any = None
    for part in loc:
        node = node[part] if isinstance(node, dict | list) and _has(node, part) else None
        if isinstance(part, int):
            if get_origin(annotation) is not list:
                return None
            candidates = _models(get_args(annotation)[0])
        else:
            field = model.model_fields.get(part)
            if field is None:
                return None
            annotation = field.annotation
            if get_origin(annotation) is list:
                continue
            candidates = _models(annotation)
        chosen = _by_tag(candidates, node)
        if chosen is None:
            return None
        model = chosen
    return model


def _has(node: dict[Any, Any] | list[Any], part: Any) -> bool:
    if isinstance(node, dict):
        return part in node
    return isinstance(part, int) and 0 <= part < len(node)


def _by_tag(candidates: list[type[BaseModel]], node: Any) -> type[BaseModel] | None:
    """The one candidate, or the one whose literal tag field (``action``, ``kind``) matches ``node``'s."""
    if len(candidates) == 1:
        return candidates[0]
    if not isinstance(node, dict):
        return None
    for model in candidates:
        for tag in ("action", "kind"):
            field = model.model_fields.get(tag)
            if (
                field is not None
                and get_origin(field.annotation) is Literal
                and node.get(tag) in get_args(field.annotation)
            ):
                return model
    return None


def _key_text(loc: Sequence[Any]) -> str:
    """A location as the user reads it: dotted keys, list entries counted from 1 (``timeline entry 2,
    at``)."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f" entry {part + 1}"
        else:
            out += (", " if out and out[-1].isdigit() else "." if out else "") + str(part)
    return out or "(top level)"


def _suggestion(word: str, choices: Sequence[str]) -> str:
    """``"; did you mean 'x'?"`` for the closest choice (difflib), empty when none is close."""
    close = difflib.get_close_matches(word, list(choices), n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def format_validation_error(
    source: str,
    error: ValidationError,
    text: str | None = None,
    data: Any = None,
    overridden: Sequence[Sequence[str]] = (),
) -> str:
    """One line: ``source: line N: key: problem (got value)``, for the first few problems.

    ``text`` (the TOML read) gives the lines, ``data`` (what was validated) the allowed keys of a list
    entry; a key set by an override (``overridden``, its key paths) gets no line of the file."""
    lines = key_lines(text) if text is not None else {}
    parts = []
    for e in error.errors()[:3]:
        loc = list(e["loc"])
        if len(loc) >= 3 and isinstance(loc[1], int) and isinstance(loc[2], str) and loc[0] == "timeline":
            del loc[2]  # the union tag (the action name) pydantic puts in the location
        msg = e["msg"].removeprefix("Value error, ")
        position = loc
        if e["type"] == "union_tag_invalid":
            ctx = e.get("ctx") or {}
            tag_key = str(ctx.get("discriminator", "")).strip("'")
            tags = [t.strip().strip("'") for t in str(ctx.get("expected_tags", "")).split(",") if t.strip()]
            got = str(ctx.get("tag", ""))
            position = [*loc, tag_key]
            msg = f"unknown {tag_key} {got!r}{_suggestion(got, tags)} (one of: {', '.join(tags)})"
        by_override = any(list(position[: len(o)]) == list(o) for o in overridden)
        line = None if by_override else line_of(lines, position)
        key = (f"line {line}: " if line is not None else "") + _key_text(loc)
        if e["type"] == "extra_forbidden":
            model = _model_at(loc[:-1], data) if data is not None else None
            allowed = sorted(model.model_fields) if model is not None else []
            listed = f" (allowed: {', '.join(allowed)})" if allowed else ""
            parts.append(f"{key}: unknown key{_suggestion(str(loc[-1]), allowed)}{listed}")
            continue
        if e["type"] == "missing":
            parts.append(f"{key}: required key is missing")
            continue
        if e["type"] == "union_tag_not_found":
            # the entry names no action: a misspelt key is the likely cause
            tag_key = str((e.get("ctx") or {}).get("discriminator", "")).strip("'")
            entry = e.get("input")
            keys = [str(k) for k in entry] if isinstance(entry, dict) else []
            close = difflib.get_close_matches(tag_key, keys, n=1)
            hint = f" ({close[0]!r}: did you mean {tag_key!r}?)" if close else ""
            line = line_of(lines, [*loc, close[0]]) if close and not by_override else line
            key = (f"line {line}: " if line is not None else "") + _key_text(loc)
            parts.append(f"{key}: no {tag_key!r} key{hint}")
            continue
        got = e.get("input")
        got_s = "" if isinstance(got, dict) or e["type"] == "union_tag_invalid" else f" (got {got!r})"
        parts.append(f"{key}: {msg}{got_s}")
    more = len(error.errors()) - len(parts)
    return f"{source}: " + "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


def load_scenario(name_or_path: str | Path, overrides: list[str] | tuple[str, ...] = ()) -> Scenario:
    """A validated scenario from a built-in name or a TOML file, with ``--set`` overrides applied."""
    p = Path(name_or_path)
    if p.suffix == ".toml" or p.exists():
        source = str(p)
        try:
            text = p.read_text()
        except FileNotFoundError:
            raise ConfigError(f"{source}: no such scenario file") from None
        except OSError as e:
            raise ConfigError(f"{source}: cannot read: {e.strerror}") from None
    elif str(name_or_path) in builtin_names():
        source = f"built-in scenario {name_or_path}"
        text = builtin_text(str(name_or_path))
    else:
        raise ConfigError(
            f"{name_or_path}: neither a scenario file nor a built-in scenario (built-in: {', '.join(builtin_names())})"
        )
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{source}: not valid TOML: {e}") from None
    overridden = []
    for item in overrides:
        path, value = parse_override(item)
        _apply_override(data, path, value)
        overridden.append(path)
    try:
        return Scenario.model_validate(data)
    except ValidationError as e:
        raise ConfigError(format_validation_error(source, e, text, data, overridden)) from None


@dataclass(frozen=True)
class Case:
    """One point of a scenario's matrix: the scenario with every axis fixed, and the axis values."""

    scenario: Scenario
    params: dict[str, Any]

    @property
    def label(self) -> str:
        return ",".join(f"{k}={v}" for k, v in self.params.items()) or "default"

    @property
    def members(self) -> int:
        m = self.scenario.group.members
        assert isinstance(m, int)
        return m

    @property
    def partitions(self) -> int:
        p = self.scenario.topic.partitions
        return self.members if p == "members" else int(p)

    @property
    def processing_gaps(self) -> dict[str, float]:
        """Each implementation's processing gap bound in this case (:mod:`.processing`), in seconds."""
        return {i: processing_gap_s(self.scenario, i, self.partitions) for i in self.scenario.implementations}


@dataclass(frozen=True)
class LeftOut:
    """A matrix case the scenario's clients cannot run (:func:`~harness.scenario.properties.client_cannot_run`):
    left out of the run and said in the report, with ``reason``."""

    params: dict[str, Any]
    reason: str

    @property
    def label(self) -> str:
        return ",".join(f"{k}={v}" for k, v in self.params.items()) or "default"


def expand(scenario: Scenario) -> list[Case]:
    """Every combination of the matrix axes (``group.members`` lists and ``[matrix]`` keys; a joint axis
    ``"a,b" = [[a1, b1], [a2, b2]]`` sets both keys from each of its values), each once:
    an axis that does not apply to a combination is dropped from it (:func:`_applicable`), and a
    combination whose client cannot run it (:func:`left_out`) is not a case. ConfigError when every
    combination is left out."""
    # only what the file and --set gave (exclude_unset): a default dumped here would count as given in the
    # case, and a shorthand's default would then clash with the same property in the properties table
    base = scenario.model_dump(mode="python", exclude={"matrix"}, exclude_unset=True)
    cases = []
    seen: set[str] = set()
    for params in _combinations(scenario):
        if _cannot_run(params, scenario) is not None:
            continue
        case = Case(case_scenario(base, params, f"scenario {scenario.name} case {params}"), params)
        if case.label not in seen:
            seen.add(case.label)
            cases.append(case)
    if not cases:
        reasons = sorted({r.reason for r in left_out(scenario)})
        raise ConfigError(f"scenario {scenario.name}: every matrix case is left out ({'; '.join(reasons)})")
    return cases


def left_out(scenario: Scenario) -> list[LeftOut]:
    """The matrix combinations :func:`expand` leaves out, each once, with the reason: a client axis
    (``group.coordinator.client``) crossed with an assignor or static membership that client does not have
    (:func:`~harness.scenario.properties.client_cannot_run`). Outside a matrix such a pair is an error of the
    scenario itself."""
    out: list[LeftOut] = []
    seen: set[str] = set()
    for params in _combinations(scenario):
        reason = _cannot_run(params, scenario)
        if reason is not None and (item := LeftOut(params, reason)).label not in seen:
            seen.add(item.label)
            out.append(item)
    return out


def _combinations(scenario: Scenario) -> list[dict[str, Any]]:
    """The matrix's combinations as dotted key -> value, each reduced to the axes that apply to it."""
    axes: dict[str, list[Any]] = {}
    if isinstance(scenario.group.members, list):
        axes["group.members"] = list(scenario.group.members)
    for key, values in scenario.matrix.items():
        keys = [k.strip() for k in key.split(",")]
        for k in keys:
            if any(k in a.split(",") for a in axes):
                raise ConfigError(f"scenario {scenario.name}: matrix.{k} repeats an axis given elsewhere")
        axes[",".join(keys)] = list(values)
    out: list[dict[str, Any]] = []
    for combo in itertools.product(*axes.values()) if axes else [()]:
        params: dict[str, Any] = {}
        for axis, value in zip(axes, combo, strict=True):
            if "," in axis:
                params.update(zip(axis.split(","), value, strict=True))
            else:
                params[axis] = value
        out.append(_applicable(params, scenario))
    return out


def _cannot_run(params: dict[str, Any], scenario: Scenario) -> str | None:
    """Why the case ``params`` cannot run on its coordinator client, or None (only when the matrix sets the
    client, the assignor or static membership: a scenario's own values were checked when it loaded)."""
    keys = ("group.coordinator.client", "group.assignor", "group.coordinator.static_membership")
    if not any(k in params for k in keys):
        return None
    g = scenario.group
    return client_cannot_run(
        str(params.get(keys[0], g.coordinator.client)),
        str(params.get(keys[1], g.assignor)),
        bool(params.get(keys[2], g.coordinator.static_membership)),
    )


def _applicable(params: dict[str, Any], scenario: Scenario) -> dict[str, Any]:
    """``params`` without the axes that do not apply to the case, so a product of axes runs such a case
    once: ``cluster.kafka_version`` applies only where the case's broker is ``apache-kafka``
    (``"cluster.broker" = ["herdlab", "apache-kafka"]`` with ``"cluster.kafka_version" = ["3.9", "4"]``
    is three cases, not four)."""
    broker = params.get("cluster.broker", scenario.cluster.broker)
    if broker != "apache-kafka" and "cluster.kafka_version" in params:
        return {k: v for k, v in params.items() if k != "cluster.kafka_version"}
    return params


def case_scenario(data: dict[str, Any], params: dict[str, Any], source: str = "the scenario") -> Scenario:
    """The scenario ``data`` (a scenario's dump) with the case's ``params`` (dotted key -> value)
    applied, validated; ConfigError naming ``source`` when it does not validate."""
    data = copy.deepcopy(data)
    data.pop("matrix", None)
    for key, value in params.items():
        _apply_override(data, key.split("."), value)
    try:
        return Scenario.model_validate(data)
    except ValidationError as e:
        raise ConfigError(format_validation_error(source, e, data=data)) from None
