"""The rules file of ``ale audit`` (its format and every rule: ``docs/audit.md``), read
with the hardened YAML loader (at most :data:`MAX_RULES_BYTES`, no alias expansion, no key
given twice), checked and typed. Entries naming a feature replace the ``"*"`` entries for
that rule (:attr:`Rule.measure`). Errors name the file, the entry and its feature.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ale_cli.errors import InputError
from ale_cli.io.yamlsafe import YamlSyntaxError, parse_yaml, read_text

SEVERITIES = ("error", "warn")
DIRECTIONS = ("increasing", "decreasing")
SIGNS = ("positive", "negative")
NOT_ESTIMABLE = ("fail", "warn", "ignore")
#: the statistics a ``drift`` rule can gate on (``drift: {statistic: naled, max_abs: 5}``)
DRIFT_STATISTICS = ("naled", "aled", "heterogeneity_share", "rank")
DEFAULT_Z = 2.0
#: the rules on a first-order curve, those on its recorded statistics, and every rule
CURVE_RULES = ("monotonic", "sign", "range")
STATISTICS = ("max_aled", "min_aled", "max_heterogeneity_share", "rank_at_most")
RULE_NAMES = (
    *CURVE_RULES,
    *STATISTICS,
    "max_interaction",
    "drift",
    "not_estimable",
    "max_regional_drop",
)
_ENTRY_KEYS = ("feature", "severity", "per_region", "output")
#: the rules ``per_region: true`` evaluates on every region of a regional summary
PER_REGION = ("monotonic", "sign")
WILDCARD = "*"
#: the largest rules file read (a rules file of a few hundred rules is a few KiB)
MAX_RULES_BYTES = 256 * 1024


@dataclass(frozen=True)
class Rule:
    """One rule of one entry: ``name``, its checked ``params`` (:func:`parse_rule`), the
    entry's feature and severity."""

    name: str
    feature: str
    severity: str
    params: dict[str, Any]
    entry: int  # 1-based position in the list
    line: int | None = None  # 1-based line of the entry in the file
    #: the model output whose records it checks (``output: proba:1``; None: every output)
    output: str | None = None
    #: evaluated on every region of a regional summary (``per_region: true``)
    per_region: bool = False

    @property
    def measure(self) -> str:
        """What it checks, by which an entry naming a feature replaces the ``"*"`` ones:
        the rule's name, and a drift rule's statistic (``drift naled``; the curve: ``drift``)."""
        statistic = self.params.get("statistic") if self.name == "drift" else None
        return self.name if statistic is None else f"{self.name} {statistic}"

    @property
    def where(self) -> str:
        at = f", line {self.line}" if self.line is not None else ""
        return f"rule {self.entry}{at} ({self.name}) on feature '{self.feature}'"


@dataclass(frozen=True)
class RuleSet:
    """The rules of a file, in file order."""

    path: Path
    rules: tuple[Rule, ...] = field(default_factory=tuple)


def _number(value: Any, what: str, *, minimum: float | None = None) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        hint = ""
        if isinstance(value, str) and re.fullmatch(r"[-+]?(\d+\.?\d*|\.\d+)[eE]\d+", value):
            hint = " (YAML reads an exponent without a sign as text: write 1.0e+9, not 1.0e9)"
        raise ValueError(f"{what} must be a number, got {value!r}{hint}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{what} must be at least {minimum:g}, got {value!r}")
    return float(value)


def _choice(value: Any, what: str, choices: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{what} must be one of {', '.join(choices)}, got {value!r}")
    return value


def _mapping(value: Any, what: str, keys: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError(f"{what} must be a mapping with {' and/or '.join(keys)}, got {value!r}")
    unknown = [k for k in value if k not in keys]
    if unknown:
        raise ValueError(f"{what} has unknown key {unknown[0]!r} (known: {', '.join(keys)})")
    return value


def _limits(value: Any, name: str, keys: tuple[str, str]) -> dict[str, float | None]:
    given = _mapping(value, name, keys)
    out = {
        k: None if given.get(k) is None else _number(given[k], f"{name}.{k}", minimum=0)
        for k in keys
    }
    if all(v is None for v in out.values()):
        raise ValueError(f"{name} needs {' and/or '.join(keys)}")
    return out


def _drift(value: Any) -> dict[str, Any]:
    """``drift`` on the curve (``max_abs``/``max_z``) or on a statistic (``statistic`` and
    ``max_abs``: the largest absolute change of the statistic from the baseline).

    >>> _drift({"statistic": "naled", "max_abs": 5})
    {'max_abs': 5.0, 'max_z': None, 'statistic': 'naled'}
    """
    given = _mapping(value, "drift", ("max_abs", "max_z", "statistic"))
    if "statistic" not in given:
        return _limits(value, "drift", ("max_abs", "max_z")) | {"statistic": None}
    statistic = _choice(given["statistic"], "drift.statistic", DRIFT_STATISTICS)
    if given.get("max_z") is not None:
        raise ValueError("drift on a statistic takes max_abs (its largest change), not max_z")
    if given.get("max_abs") is None:
        raise ValueError(f"drift on {statistic} needs max_abs (its largest change)")
    return {
        "max_abs": _number(given["max_abs"], "drift.max_abs", minimum=0),
        "max_z": None,
        "statistic": statistic,
    }


def parse_rule(name: str, value: Any) -> dict[str, Any]:
    """The checked parameters of rule ``name`` with the YAML ``value``; ValueError if wrong.

    >>> parse_rule("monotonic", "increasing")
    {'direction': 'increasing', 'z': 2.0, 'tolerance': None}
    >>> parse_rule("range", [None, 3])
    {'lo': None, 'hi': 3.0}
    """
    if name == "monotonic":
        if isinstance(value, str):
            direction = _choice(value, name, DIRECTIONS)
            return {"direction": direction, "z": DEFAULT_Z, "tolerance": None}
        given = _mapping(value, name, ("direction", "z", "tolerance"))
        if "direction" not in given:
            raise ValueError("monotonic needs a direction (increasing or decreasing)")
        if "z" in given and "tolerance" in given:
            raise ValueError("monotonic takes z or tolerance, not both")
        direction = _choice(given["direction"], "monotonic.direction", DIRECTIONS)
        tolerance = given.get("tolerance")
        if tolerance is None:
            z = _number(given.get("z", DEFAULT_Z), "monotonic.z", minimum=0)
            return {"direction": direction, "z": z, "tolerance": None}
        tolerance = _number(tolerance, "monotonic.tolerance", minimum=0)
        return {"direction": direction, "z": None, "tolerance": tolerance}
    if name == "sign":
        return {"sign": _choice(value, name, SIGNS)}
    if name == "range":
        if not isinstance(value, list) or len(value) != 2:
            raise ValueError(f"range must be a list [lo, hi], got {value!r}")
        lo, hi = (None if v is None else _number(v, "range") for v in value)
        if lo is not None and hi is not None and lo > hi:
            raise ValueError(f"range [lo, hi] needs lo <= hi, got {value!r}")
        return {"lo": lo, "hi": hi}
    if name in ("max_aled", "min_aled", "max_heterogeneity_share", "max_regional_drop"):
        return {"limit": _number(value, name, minimum=0)}
    if name == "rank_at_most":
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"rank_at_most must be an integer of at least 1, got {value!r}")
        return {"limit": int(value)}
    if name == "max_interaction":
        if not isinstance(value, dict):
            return {"max_abs": _number(value, name, minimum=0), "max_share": None}
        return _limits(value, name, ("max_abs", "max_share"))
    if name == "drift":
        return _drift(value)
    if name == "not_estimable":
        return {"action": _choice(value, name, NOT_ESTIMABLE)}
    raise ValueError(f"unknown rule {name!r} (known: {', '.join(RULE_NAMES)})")


def _entry_lines(text: str) -> list[int | None]:
    """1-based line of each entry of the ``rules`` list (best effort, for messages)."""
    import yaml

    try:  # composing (no alias expansion) a text the bounded loader has already read
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return []
    if not isinstance(root, yaml.MappingNode):
        return []
    for key, value in root.value:
        if isinstance(key, yaml.ScalarNode) and key.value == "rules":
            if isinstance(value, yaml.SequenceNode):
                return [item.start_mark.line + 1 for item in value.value]
    return []


def parse_rules(data: Any, *, path: Path, lines: list[int | None] | None = None) -> RuleSet:
    """Check the loaded YAML ``data`` of a rules file and return its rules."""
    prefix = f"rules file '{path}'"
    if not isinstance(data, dict) or "rules" not in data:
        raise InputError(f"{prefix} must be a mapping with a list under 'rules:'")
    extra = [k for k in data if k != "rules"]
    if extra:
        raise InputError(f"{prefix}: unknown top-level key '{extra[0]}' (expected only 'rules')")
    entries = data["rules"]
    if not isinstance(entries, list) or not entries:
        raise InputError(f"{prefix}: 'rules' must be a non-empty list of entries")
    lines = lines or []
    rules: list[Rule] = []
    for i, entry in enumerate(entries, start=1):
        line = lines[i - 1] if i - 1 < len(lines) else None
        at = f"{prefix}: rule {i}" + (f", line {line}" if line is not None else "")
        if not isinstance(entry, dict):
            raise InputError(f"{at}: an entry must be a mapping with 'feature' and rules")
        feature = entry.get("feature")
        if not isinstance(feature, str) or not feature:
            raise InputError(f"{at}: 'feature' must be a feature name or \"*\", got {feature!r}")
        at += f" (feature '{feature}')"
        try:
            severity = _choice(entry.get("severity", "error"), "severity", SEVERITIES)
        except ValueError as exc:
            raise InputError(f"{at}: {exc}") from None
        names = [k for k in entry if k not in _ENTRY_KEYS]
        if not names:
            raise InputError(f"{at}: no rule given (rules: {', '.join(RULE_NAMES)})")
        output = entry.get("output")
        if output is not None and (not isinstance(output, str) or not output):
            raise InputError(f"{at}: output must be an output's name (e.g. proba:1)")
        per_region = entry.get("per_region", False)
        if not isinstance(per_region, bool):
            raise InputError(f"{at}: per_region must be true or false, got {per_region!r}")
        if per_region and not any(n in PER_REGION for n in names):
            raise InputError(f"{at}: per_region applies to {' and '.join(PER_REGION)}")
        for name in names:
            if name not in RULE_NAMES:
                raise InputError(f"{at}: unknown rule '{name}' (rules: {', '.join(RULE_NAMES)})")
            try:
                params = parse_rule(name, entry[name])
            except ValueError as exc:
                raise InputError(f"{at}: {exc}") from None
            regional = per_region and name in PER_REGION
            rules.append(Rule(name, feature, severity, params, i, line, output, regional))
    return RuleSet(path=path, rules=tuple(rules))


def read_rules(path: str | Path) -> RuleSet:
    """Read and check a rules file with the hardened loader."""
    path = Path(path)
    text = read_text(path, "rules file", max_bytes=MAX_RULES_BYTES)
    try:
        data = parse_yaml(text, f"rules file '{path}'")
    except YamlSyntaxError as exc:
        where = f" at line {exc.line}" if exc.line is not None else ""
        raise InputError(f"rules file '{path}' is not valid YAML{where}: {exc.reason}") from None
    return parse_rules(data, path=path, lines=_entry_lines(text))
