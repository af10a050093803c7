"""kubectl's JSONPath: paths (``custom-columns``, ``--sort-by``) and templates (``-o jsonpath=``).

A path is a chain of steps: ``.key`` (a dot inside a key written ``\\.``), ``.*`` (every value
of a map or item of a list), ``..key`` (recursive descent), ``[2]``, ``[-1]``, ``[*]``, unions
``[0,2]``, slices ``[1:3]`` / ``[::2]``, and filters ``[?(@.type=="Ready")]`` (``==``, ``!=``,
``<``, ``<=``, ``>``, ``>=`` against a quoted string or a number) or ``[?(@.key)]`` (the key
exists); ``$`` is the root, ``@`` the current object, and ``{...}`` may wrap it.

A template is text with ``{PATH}`` fields, ``{range PATH}...{end}`` loops and ``{"\\n"}``
literals; a field printing several values separates them with spaces, and a missing field
prints nothing (kubectl's default ``--allow-missing-template-keys``).
"""

from __future__ import annotations

import json
import operator
import re
from collections.abc import Callable
from typing import Any

_DESCENT = r"\.\.((?:\\\.|[^.\[])+)"
_KEY = r"\.((?:\\\.|[^.\[])+)"
_INDEX = r"\[\s*(\*|-?\d*\s*:\s*-?\d*(?:\s*:\s*-?\d+)?|-?\d+(?:\s*,\s*-?\d+)*)\s*\]"
_FILTER = (
    r"""\[\?\(@((?:\.[\w./-]+)+)\s*"""
    r"""(?:(==|!=|<=|>=|<|>)\s*(?:"([^"]*)"|'([^']*)'|(-?[\d.]+)))?\s*\)\]"""
)
_STEP = re.compile(f"{_DESCENT}|{_KEY}|{_INDEX}|{_FILTER}")
_COMPARE: dict[str, Callable[[Any, Any], Any]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "'": "'", "\\": "\\"}


class JsonPathError(ValueError):
    """A path or template kubectl's JSONPath would not parse."""


def select(obj: Any, path: str, root: Any = None) -> list[Any]:
    """The values ``path`` selects in ``obj`` (``$`` starts from ``root``, else ``obj``):
    ``.metadata.annotations.gpu-fraction``, ``.spec.containers[0].image``,
    ``.items[*].metadata.name``, ``.status.conditions[?(@.type=="Ready")].status``."""
    text = path.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1].strip()
    if text.startswith("$"):
        obj, text = (obj if root is None else root), text[1:]
    elif text.startswith("@"):
        text = text[1:]
    if text and not text.startswith((".", "[")):
        text = "." + text
    values = [obj]
    position = 0
    for match in _STEP.finditer(text):
        if match.start() != position:
            break
        position = match.end()
        values = _step(values, match)
    if position != len(text):
        raise JsonPathError(
            f'unexpected path "{path}": write e.g. .metadata.name or .spec.items[0]'
        )
    return [v for v in values if v is not None]


def _step(values: list[Any], match: re.Match[str]) -> list[Any]:
    descent, key, index, field, comparison, quoted, single, number = match.groups()
    if descent is not None:
        return _field([x for v in values for x in _descendants(v)], descent)
    if key is not None:
        return _field(values, key)
    lists = [v for v in values if isinstance(v, list)]
    if index == "*":
        return [x for v in lists for x in v]
    if index is not None and ":" in index:
        bounds = [int(b) if b.strip() else None for b in index.split(":")]
        if bounds[2:] == [0]:
            raise JsonPathError(f"a slice's step cannot be 0: [{index}]")
        return [x for v in lists for x in v[slice(*bounds)]]
    if index is not None:
        picked = [int(i) for i in index.split(",")]
        return [v[i] for v in lists for i in picked if -len(v) <= i < len(v)]
    items = [x for v in lists for x in v]
    if comparison is None:
        return [x for x in items if select(x, field)]
    literal: Any = quoted if quoted is not None else single
    if literal is None:
        literal = float(number)
    return [x for x in items if _holds(select(x, field), _COMPARE[comparison], literal)]


def _field(values: list[Any], key: str) -> list[Any]:
    """``.key`` of each value (``.*``: every child)."""
    key = key.replace("\\.", ".")
    if key == "*":
        return [x for v in values for x in _children(v)]
    return [v[key] for v in values if isinstance(v, dict) and key in v]


def _children(value: Any) -> list[Any]:
    """The values of a map or the items of a list."""
    if isinstance(value, dict):
        return list(value.values())
    return list(value) if isinstance(value, list) else []


def _descendants(value: Any) -> list[Any]:
    """``value`` and everything inside it, depth first (what ``..`` searches)."""
    found = [value]
    for child in _children(value):
        found += _descendants(child)
    return found


def _holds(found: list[Any], compare: Callable[[Any, Any], Any], literal: Any) -> bool:
    """Whether the first value found compares as asked with a literal of the same type (a
    number with a number, a string with a string; anything else never matches, even ``!=``)."""
    if not found:
        return False
    value = found[0]
    if isinstance(literal, float):
        is_number = isinstance(value, int | float) and not isinstance(value, bool)
        return is_number and bool(compare(value, literal))
    return isinstance(value, str) and bool(compare(value, literal))


def template(obj: Any, text: str) -> str:
    """A kubectl JSONPath template filled from ``obj``; text without ``{`` is one path."""
    if "{" not in text:
        text = "{" + text + "}"
    nodes, end = _parse(_tokens(text), 0)
    if end is not None:
        raise JsonPathError(f'unexpected "{{end}}" in template "{text}"')
    return "".join(_render(nodes, obj, obj))


Token = tuple[str, str]  # ("text" | "field", content)
Node = tuple[str, Any]


def _tokens(text: str) -> list[Token]:
    """Literal text and the contents of ``{...}`` (braces inside quotes do not count)."""
    tokens: list[Token] = []
    position = 0
    while position < len(text):
        start = text.find("{", position)
        if start < 0:
            tokens.append(("text", text[position:]))
            break
        if start > position:
            tokens.append(("text", text[position:start]))
        end, quote = start + 1, ""
        while end < len(text) and (quote or text[end] != "}"):
            if text[end] in "\"'" and (not quote or quote == text[end]):
                quote = "" if quote else text[end]
            elif text[end] == "\\":
                end += 1
            end += 1
        if end >= len(text):
            raise JsonPathError(f'unclosed "{{" in template "{text}"')
        tokens.append(("field", text[start + 1 : end].strip()))
        position = end + 1
    return tokens


def _parse(tokens: list[Token], at: int) -> tuple[list[Node], int | None]:
    """Nodes up to the matching ``{end}`` (its index) or the end of the tokens (None)."""
    nodes: list[Node] = []
    while at < len(tokens):
        kind, content = tokens[at]
        if kind == "text":
            nodes.append(("text", content))
        elif content == "end":
            return nodes, at
        elif content.startswith("range "):
            body, end = _parse(tokens, at + 1)
            if end is None:
                raise JsonPathError(f'"{{range {content[6:]}}}" has no "{{end}}"')
            nodes.append(("range", (content[6:].strip(), body)))
            at = end
        elif content[:1] in "\"'" and content[-1:] == content[:1] and len(content) >= 2:
            nodes.append(("text", re.sub(r"\\(.)", _unescape, content[1:-1])))
        else:
            select({}, content)  # a path that cannot parse fails now, not on the first object
            nodes.append(("field", content))
        at += 1
    return nodes, None


def _unescape(match: re.Match[str]) -> str:
    return _ESCAPES.get(match.group(1), match.group(0))


def _render(nodes: list[Node], current: Any, root: Any) -> list[str]:
    out: list[str] = []
    for kind, content in nodes:
        if kind == "text":
            out.append(content)
        elif kind == "field":
            out.append(" ".join(_text(v) for v in select(current, content, root)))
        else:
            path, body = content
            for item in select(current, path, root):
                out += _render(body, item, root)
    return out


def _text(value: Any) -> str:
    """A value as kubectl's JSONPath prints it: strings bare, maps and lists as JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"), sort_keys=True)
    return str(value)
