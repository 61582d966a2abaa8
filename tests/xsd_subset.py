"""A validator for the subset of XML Schema that tests/data/junit.xsd uses.

Neither xmlschema nor lxml is installed in the project's environment, so the
JUnit report is checked against the XSD by this small interpreter: global
``xs:element`` declarations (``type="xs:string"`` or an inline
``xs:complexType``), ``xs:sequence`` / ``xs:choice`` of ``ref`` particles with
``minOccurs``/``maxOccurs``, ``xs:attribute`` (``use="required"``, types
``xs:string``, ``xs:int``, ``xs:decimal``) and ``xs:simpleContent`` text. Any
other XSD construct in the schema is an error, so the check cannot silently
weaken.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

XS = "{http://www.w3.org/2001/XMLSchema}"
_TYPES = {
    "xs:string": re.compile(r".*", re.S),
    "xs:int": re.compile(r"[+-]?\d+"),
    "xs:decimal": re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)"),
}
_ALLOWED = {
    "schema",
    "element",
    "complexType",
    "sequence",
    "choice",
    "attribute",
    "simpleContent",
    "extension",
}


class Invalid(Exception):
    pass


def _occurs(node: ET.Element) -> tuple[int, float]:
    hi = node.get("maxOccurs", "1")
    return int(node.get("minOccurs", "1")), float("inf") if hi == "unbounded" else int(hi)


def load(path: Path) -> dict[str, ET.Element]:
    root = ET.parse(path).getroot()
    for node in root.iter():
        if not isinstance(node.tag, str):
            continue
        local = node.tag.removeprefix(XS)
        if local not in _ALLOWED:
            raise ValueError(f"unsupported XSD construct {local}")
    return {e.get("name"): e for e in root.findall(f"{XS}element")}


def _attributes(elem: ET.Element, decl: list[ET.Element]) -> None:
    known = {a.get("name"): a for a in decl}
    for name, value in elem.attrib.items():
        if name not in known:
            raise Invalid(f"<{elem.tag}> has attribute {name!r} not in the schema")
        if not _TYPES[known[name].get("type", "xs:string")].fullmatch(value):
            raise Invalid(f"<{elem.tag} {name}={value!r}> is not a {known[name].get('type')}")
    for name, a in known.items():
        if a.get("use") == "required" and name not in elem.attrib:
            raise Invalid(f"<{elem.tag}> lacks the required attribute {name!r}")


def validate(elem: ET.Element, schema: dict[str, ET.Element]) -> None:
    """Raise Invalid unless ``elem`` (and everything inside) matches its declaration."""
    decl = schema.get(elem.tag)
    if decl is None:
        raise Invalid(f"element <{elem.tag}> is not declared")
    if decl.get("type") is not None:  # a simple type: text only
        if len(elem) or elem.attrib:
            raise Invalid(f"<{elem.tag}> must hold only text")
        return
    ctype = decl.find(f"{XS}complexType")
    simple = ctype.find(f"{XS}simpleContent")
    if simple is not None:
        if len(elem):
            raise Invalid(f"<{elem.tag}> must hold only text")
        _attributes(elem, simple.find(f"{XS}extension").findall(f"{XS}attribute"))
        return
    _attributes(elem, ctype.findall(f"{XS}attribute"))
    if (elem.text or "").strip():
        raise Invalid(f"<{elem.tag}> must not hold text")
    children = list(elem)
    seq, choice = ctype.find(f"{XS}sequence"), ctype.find(f"{XS}choice")
    if seq is not None:
        i = 0
        for particle in seq.findall(f"{XS}element"):
            lo, hi = _occurs(particle)
            n = 0
            while i < len(children) and children[i].tag == particle.get("ref") and n < hi:
                i, n = i + 1, n + 1
            if n < lo:
                raise Invalid(f"<{elem.tag}> needs at least {lo} <{particle.get('ref')}>")
        if i < len(children):
            raise Invalid(f"<{elem.tag}> has <{children[i].tag}> out of place")
    elif choice is not None:
        lo, hi = _occurs(choice)
        refs = {p.get("ref") for p in choice.findall(f"{XS}element")}
        if not lo <= len(children) <= hi:
            raise Invalid(f"<{elem.tag}> has {len(children)} children")
        for child in children:
            if child.tag not in refs:
                raise Invalid(f"<{elem.tag}> may not hold <{child.tag}>")
    elif children:
        raise Invalid(f"<{elem.tag}> must be empty")
    for child in children:
        validate(child, schema)
