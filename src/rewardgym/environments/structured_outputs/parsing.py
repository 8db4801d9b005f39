"""Parse a text answer by schema type and coerce the string leaves that XML and CSV produce.

Contract:
- :func:`parse_text` uses ``json.loads``, ``yaml.safe_load`` (bounded: :mod:`rewardgym.io.yaml_bounds`;
  YAML 1.1: unquoted dates become ``date`` objects, ``yes``/``no`` booleans), ``xmltodict.parse`` (root tag
  is the top key, attributes ``@attr``, leaves are strings), ``tomllib.loads`` or ``csv.DictReader``; any
  exception propagates.
- :func:`coerce_xml` walks data and schema together where the schema has a (single) ``type``: objects
  recurse into known properties; arrays unwrap a single-key dict (the ``{"item": [...]}`` artefact), wrap
  a non-list (``None`` gives ``[]``) and coerce each element; ``None`` under ``string`` becomes ``""``;
  string leaves convert by :func:`convert_scalar`.
- :func:`coerce_csv` converts each row's cells by the item schema's property types; a missing type is
  ``string``; ``""`` stays ``""`` unless the type list allows ``null`` (then ``None``); for a type list
  the non-null types are tried in order and the first conversion giving a non-string wins.
- A failed conversion keeps the original string (validation then reports the type error).
"""

from __future__ import annotations

import csv
import io
import json
import tomllib
from typing import Any, Literal

import xmltodict  # type: ignore[import-untyped]

from rewardgym.io.yaml_bounds import load_bounded

SchemaType = Literal["json", "yaml", "xml", "toml", "csv"]


def parse_text(text: str, schema_type: SchemaType) -> Any:
    """The document in ``text`` parsed as ``schema_type`` (raises on a syntax error)."""
    if schema_type == "yaml":
        return load_bounded(text)  # yaml.safe_load, but an alias bomb is refused, not expanded
    if schema_type == "xml":
        return xmltodict.parse(text)
    if schema_type == "toml":
        return tomllib.loads(text)
    if schema_type == "csv":
        return list(csv.DictReader(io.StringIO(text)))
    return json.loads(text)


def convert_scalar(value: str, type_name: Any) -> Any:
    """``value`` as an ``integer``/``number``/``boolean``; unchanged if that fails or for other types."""
    try:
        if type_name == "integer":
            return int(value)
        if type_name == "number":
            return float(value)
    except ValueError:
        return value
    if type_name == "boolean":
        lowered = value.strip().lower()
        if lowered in ("true", "1"):
            return True
        if lowered in ("false", "0"):
            return False
    return value


def coerce_xml(data: Any, schema: Any) -> Any:
    """XML data with leaves converted to the schema's types (see the module contract)."""
    if not isinstance(schema, dict):
        return data
    type_name = schema.get("type")
    if type_name == "object":
        properties = schema.get("properties")
        if isinstance(data, dict) and isinstance(properties, dict):
            return {
                key: coerce_xml(value, properties[key]) if key in properties else value
                for key, value in data.items()
            }
        return data
    if type_name == "array":
        if isinstance(data, dict) and len(data) == 1:
            data = next(iter(data.values()))
        if data is None:
            data = []
        elif not isinstance(data, list):
            data = [data]
        items = schema.get("items")
        return [coerce_xml(element, items) for element in data]
    if type_name == "string" and data is None:
        return ""
    if isinstance(data, str):
        return convert_scalar(data, type_name)
    return data


def coerce_csv_cell(value: str, type_spec: Any) -> Any:
    """One CSV cell converted by its property's ``type`` (a name or a list of names)."""
    if value == "":
        return None if isinstance(type_spec, list) and "null" in type_spec else ""
    if not isinstance(type_spec, list):
        return convert_scalar(value, type_spec)
    for type_name in type_spec:
        if type_name == "null":
            continue
        if type_name == "string":
            return value
        converted = convert_scalar(value, type_name)
        if not isinstance(converted, str):
            return converted
    return value


def coerce_csv(rows: Any, schema: Any) -> Any:
    """CSV rows with cells converted by the item schema (``schema.items``, or ``schema`` itself)."""
    if not isinstance(rows, list) or not isinstance(schema, dict):
        return rows
    item_schema = schema.get("items", schema)
    properties = item_schema.get("properties") if isinstance(item_schema, dict) else None
    if not isinstance(properties, dict):
        return rows
    coerced: list[Any] = []
    for row in rows:
        if not isinstance(row, dict):
            coerced.append(row)
            continue
        new_row: dict[Any, Any] = {}
        for key, value in row.items():
            prop = properties.get(key) if isinstance(key, str) else None
            if isinstance(prop, dict) and isinstance(value, str):
                new_row[key] = coerce_csv_cell(value, prop.get("type", "string"))
            else:
                new_row[key] = value
        coerced.append(new_row)
    return coerced
