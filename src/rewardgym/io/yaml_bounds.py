"""Bounded YAML loading: every YAML document rewardgym reads goes through :func:`load_bounded`.

Why: YAML aliases make a few lines stand for an exponential tree (``b: [*a, *a, …]`` nine times nested is
9^9 nodes). PyYAML builds it cheaply with shared references, but anything that walks the result —
OmegaConf, ``to_container``, a schema validator — visits every copy and runs for minutes or hours.

Contract:
- A document longer than ``max_bytes`` (:data:`MAX_DOCUMENT_BYTES`, 16 MiB; characters for text, bytes for a
  file) is refused before parsing; of a file at most ``max_bytes + 1`` bytes are read.
- The node graph is composed first (aliases still shared), then its *expanded* size — every alias counted
  as a full copy of what it names, as a consumer walking the result would see it — and depth are measured in
  time linear in the distinct nodes. More than ``max_nodes`` (:data:`MAX_EXPANDED_NODES`, 100,000;
  :data:`CONFIG_MAX_NODES`, 10,000, for configuration)
  expanded nodes, nesting deeper than ``max_depth`` (:data:`MAX_DEPTH`, 100), or an alias inside the node it
  names (a recursive structure) is refused with :class:`YamlLimitError`, whose mark is the offending node.
- Otherwise the result is exactly ``yaml.load(text, Loader=loader)``: one parse, nothing else changes.
- :class:`YamlLimitError` is a ``yaml.MarkedYAMLError``, so callers that already handle malformed YAML
  handle it too; they should say "over a limit", not "malformed" (``str(exc)`` says which limit).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import yaml

MAX_DOCUMENT_BYTES: Final = 16 * 1024 * 1024
MAX_EXPANDED_NODES: Final = 100_000
CONFIG_MAX_NODES: Final = 10_000
"""The bound for configuration (files, ``env.yaml``, override values): the config pipeline costs about a
millisecond per node, and the largest built-in config has 60."""
MAX_DEPTH: Final = 100
_ON_STACK: Final = -1


class YamlLimitError(yaml.MarkedYAMLError):
    """A YAML document over a size, alias-expansion or depth limit (see the module docstring)."""

    def __init__(self, problem: str, mark: yaml.Mark | None = None) -> None:
        super().__init__(problem=problem, problem_mark=mark)

    def __str__(self) -> str:
        mark = self.problem_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        return f"{where}{self.problem}"


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def _check_expansion(root: yaml.Node, max_nodes: int, max_depth: int) -> None:
    """Refuse ``root`` when its alias-expanded tree is over the limits (iterative: no recursion limit)."""
    sizes: dict[int, int] = {}
    depths: dict[int, int] = {}
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            children = _children(node)
            size = 1 + sum(sizes[id(child)] for child in children)
            depth = 1 + max((depths[id(child)] for child in children), default=0)
            if size > max_nodes:
                raise YamlLimitError(
                    f"this node expands to {size:,} nodes through aliases, over the limit of {max_nodes:,} "
                    "(an alias bomb?); refused",
                    node.start_mark,
                )
            if depth > max_depth:
                raise YamlLimitError(f"nested more than {max_depth} levels deep; refused", node.start_mark)
            sizes[key] = size
            depths[key] = depth
            continue
        state = sizes.get(key)
        if state == _ON_STACK:
            problem = "an alias refers to the node that contains it (a recursive structure); refused"
            raise YamlLimitError(problem, node.start_mark)
        if state is not None:
            continue
        sizes[key] = _ON_STACK
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node))


def load_bounded(
    text: str,
    loader: type[yaml.SafeLoader] = yaml.SafeLoader,
    *,
    max_bytes: int = MAX_DOCUMENT_BYTES,
    max_nodes: int = MAX_EXPANDED_NODES,
    max_depth: int = MAX_DEPTH,
) -> Any:
    """``yaml.load(text, Loader=loader)`` within the limits of the module docstring."""
    if len(text) > max_bytes:
        raise YamlLimitError(f"the document is longer than {max_bytes:,} characters; refused")
    parser = loader(text)
    try:
        try:
            root = parser.get_single_node()
        except RecursionError:
            raise YamlLimitError(f"nested more than {max_depth} levels deep; refused") from None
        if root is None:
            return None
        _check_expansion(root, max_nodes, max_depth)
        return parser.construct_document(root)
    finally:
        parser.dispose()


def load_bounded_file(
    path: Path,
    loader: type[yaml.SafeLoader] = yaml.SafeLoader,
    *,
    max_bytes: int = MAX_DOCUMENT_BYTES,
    max_nodes: int = MAX_EXPANDED_NODES,
    max_depth: int = MAX_DEPTH,
) -> Any:
    """:func:`load_bounded` of a UTF-8 file, never reading more than ``max_bytes + 1`` bytes of it.

    Raises ``OSError`` / ``UnicodeDecodeError`` as reading does, and the errors of :func:`load_bounded`.
    """
    with path.open("rb") as handle:
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise YamlLimitError(f"the file is larger than {max_bytes:,} bytes; refused")
    text = data.decode("utf-8")
    return load_bounded(text, loader, max_bytes=max_bytes, max_nodes=max_nodes, max_depth=max_depth)
