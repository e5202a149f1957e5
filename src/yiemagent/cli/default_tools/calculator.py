"""Example tool `calculator`: arithmetic evaluated safely with `ast` (no `eval`).

Numbers, `+ - * / // % **`, parentheses, unary minus/plus, the constants `pi` and `e`, and a
few functions (`sqrt abs round min max sum mean hypot floor ceil log log10 exp sin cos
tan`; `average` and `avg` are `mean`: the description names only a few, and a model also
writes the others). A currency sign before a number is dropped (`$45 * 20%`). Limits keep
a call cheap: at most 500 characters, exponents up to 10 000 and integer results up to
10 000 bits. Every problem is a `CalculatorError` (a `ValueError`) with a short text for
the model.

A number followed by `%` with no operand after it is a percentage, as people write it:
`12% * 50`, `12% of 50` and `50 * 12%` are 6, `50%` is 0.5; `10 % 4` stays the
remainder. A percentage added to or taken from a value is a percentage of that value, as
pocket and phone calculators read it: `150 + 10%` is 165 and `80 - 25%` is 60, not 150.1
and 79.75.

A date written as people and models write one, YYYY-MM-DD, may be subtracted from another:
`2026-12-25 - 2026-03-01` is 299, the days between them (the earlier date first gives a
negative count). The tool's result for one date minus another says it in words too,
`2026-03-01 - 2026-12-25 = -299 days: 2026-03-01 is 299 days before 2026-12-25`, since a
model asked "how many days between" writes the dates in the question's order and repeats
the result. A date anywhere else, or one that does not exist (`2026-02-30`), is a
`CalculatorError` saying so, rather than Python's complaint about leading zeros.
"""

from __future__ import annotations

import ast
import datetime
import math
import operator
import re
import statistics
from collections.abc import Callable

from yiemagent import AgentTool, tool
from yiemagent.errors import YiemAgentError

MAX_LENGTH = 500
MAX_EXPONENT = 10_000
MAX_BITS = 10_000

Number = int | float

_PERCENT_OF = re.compile(r"(\d+(?:\.\d+)?|\))\s*%\s*of\b", re.IGNORECASE)
_PERCENT = re.compile(r"(\d+(?:\.\d+)?)\s*%(?!\s*[\w.(])")
# A percentage becomes a call of this name (no constant's or function's), so that `+` and
# `-` can tell `150 + 10%` from `150 + 0.1`.
_PERCENT_CALL = "__percent__"
_CURRENCY = re.compile(r"[$€£¥]\s*(?=[\d.(])")
_DATE = re.compile(r"(?<![\w.])(\d{4})-(\d{2})-(\d{2})(?![\w.])")
_DATE_MINUS_DATE = re.compile(r"\s*(\d{4}-\d{2}-\d{2})\s*-\s*(\d{4}-\d{2}-\d{2})\s*")
# A date becomes a call of this name, with its year, month and day as plain integers.
_DATE_CALL = "__date__"


class CalculatorError(YiemAgentError, ValueError):
    """The expression is not allowed or cannot be computed."""


_BINARY: dict[type[ast.operator], Callable[[Number, Number], Number]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
}
_FUNCTIONS: dict[str, Callable[..., Number]] = {
    "sqrt": math.sqrt,
    "abs": abs,
    "round": round,
    "min": min,
    "max": max,
    "sum": lambda *values: sum(values),
    "mean": lambda *values: statistics.fmean(values),
    "average": lambda *values: statistics.fmean(values),
    "avg": lambda *values: statistics.fmean(values),
    "hypot": math.hypot,
    "floor": math.floor,
    "ceil": math.ceil,
    "log": math.log,
    "log10": math.log10,
    "exp": math.exp,
    "sin": math.sin,
    "cos": math.cos,
    "tan": math.tan,
}
_CONSTANTS: dict[str, float] = {"pi": math.pi, "e": math.e}


def _power(base: Number, exponent: Number) -> Number:
    if abs(exponent) > MAX_EXPONENT:
        raise CalculatorError(f"exponent {exponent} is too large (limit {MAX_EXPONENT})")
    if (
        isinstance(base, int)
        and isinstance(exponent, int)
        and abs(base) > 1
        and abs(base).bit_length() * exponent > MAX_BITS
    ):
        raise CalculatorError("result is too large")
    if base == 0 and exponent < 0:
        raise CalculatorError("division by zero")
    result: Number = base**exponent
    if isinstance(result, complex):
        raise CalculatorError("result is not a real number")
    return result


def _check(value: Number) -> Number:
    if isinstance(value, int) and value.bit_length() > MAX_BITS:
        raise CalculatorError("result is too large")
    if isinstance(value, float) and not math.isfinite(value):
        raise CalculatorError("result is not a finite number")
    return value


def _eval(node: ast.AST) -> Number:
    if isinstance(node, ast.Expression):
        return _eval(node.body)
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, int | float):
            raise CalculatorError(f"not a number: {node.value!r}")
        return _check(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        value = _eval(node.operand)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp) and _is_date(node.left) and _is_date(node.right):
        if not isinstance(node.op, ast.Sub):
            raise CalculatorError(_DATE_USE)
        return (_date(node.left) - _date(node.right)).days
    if isinstance(node, ast.BinOp):
        left, right = _eval(node.left), _eval(node.right)
        if isinstance(node.op, ast.Add | ast.Sub) and _is_percentage(node.right):
            right = left * right
        if isinstance(node.op, ast.Pow):
            return _check(_power(left, right))
        function = _BINARY.get(type(node.op))
        if function is None:
            raise CalculatorError(f"operator not allowed: {type(node.op).__name__}")
        return _check(function(left, right))
    if isinstance(node, ast.Name) and node.id in _CONSTANTS:
        return _CONSTANTS[node.id]
    if _is_percentage(node):
        assert isinstance(node, ast.Call)  # for mypy: `_is_percentage` checked it
        return _check(_eval(node.args[0]) / 100)
    if _is_date(node):
        raise CalculatorError(f"{_date(node)} is a date; {_DATE_USE}")
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
        function = _FUNCTIONS.get(node.func.id)
        if function is None:
            raise CalculatorError(f"unknown function {node.func.id!r}")
        return _check(function(*(_eval(arg) for arg in node.args)))
    raise CalculatorError(f"not allowed in an expression: {type(node).__name__}")


# No example dates here: the embedded model copies an example into its next call.
_DATE_USE = (
    "dates can only be subtracted from each other: the later date minus the earlier one "
    "gives the days between them"
)


def _is_date(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == _DATE_CALL
        and len(node.args) == 3
        and all(isinstance(a, ast.Constant) and type(a.value) is int for a in node.args)
        and not node.keywords
    )


def _date(node: ast.AST) -> datetime.date:
    """The date a `_DATE_CALL` node holds.

    Raises:
        CalculatorError: no such day (month 13, February 30).
    """
    assert isinstance(node, ast.Call)  # for mypy: `_is_date` checked it
    year, month, day = [
        arg.value
        for arg in node.args
        if isinstance(arg, ast.Constant) and isinstance(arg.value, int)
    ]
    written = f"{year:04d}-{month:02d}-{day:02d}"
    try:
        return datetime.date(year, month, day)
    except ValueError:
        raise CalculatorError(f"{written} is not a date") from None


def _is_percentage(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == _PERCENT_CALL
        and len(node.args) == 1
        and not node.keywords
    )


def evaluate(expression: str) -> Number:
    """The value of an arithmetic `expression`.

    Raises:
        CalculatorError: not arithmetic, too long, too large, division by zero, or a math
            domain error; the text says which.
    """
    text = expression.strip().replace("^", "**").replace("×", "*").replace("÷", "/")
    text = _CURRENCY.sub("", text)
    text = _PERCENT.sub(rf"{_PERCENT_CALL}(\1)", _PERCENT_OF.sub(r"\1% *", text))
    text = _DATE.sub(lambda m: f"{_DATE_CALL}({int(m[1])}, {int(m[2])}, {int(m[3])})", text)
    if not text:
        raise CalculatorError("empty expression")
    if len(text) > MAX_LENGTH:
        raise CalculatorError(f"expression longer than {MAX_LENGTH} characters")
    try:
        tree = ast.parse(text, mode="eval")
        return _eval(tree)
    except CalculatorError:
        raise
    except ZeroDivisionError:
        raise CalculatorError("division by zero") from None
    except SyntaxError as exc:  # its str() adds "(<unknown>, line 1)", which helps no one
        raise CalculatorError(f"cannot evaluate {expression!r}: {exc.msg}") from None
    except (ValueError, TypeError, OverflowError, RecursionError, MemoryError) as exc:
        raise CalculatorError(f"cannot evaluate {expression!r}: {exc}") from None


def format_number(value: Number) -> str:
    """`value` as short text: integers exactly, floats to 12 significant digits."""
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return format(value, ".12g")
    return str(value)


@tool(parallel=True)
def calculator(expression: str) -> str:
    """Evaluate an arithmetic expression.

    Args:
        expression: The arithmetic expression to evaluate: numbers, + - * / ** %,
            parentheses, sqrt(), round(), log(), pi.
    """
    value = evaluate(expression)
    text = f"{expression.strip()} = {format_number(value)}"
    dates = _DATE_MINUS_DATE.fullmatch(expression)
    if dates is None or not isinstance(value, int):
        return text
    first, second = dates.groups()
    unit = "day" if abs(value) == 1 else "days"
    if value == 0:
        return f"{text} {unit}: the same day"
    order = "before" if value < 0 else "after"
    return f"{text} {unit}: {first} is {abs(value)} {unit} {order} {second}"


def get_tool() -> AgentTool:
    """The `calculator` tool (tool file)."""
    return calculator
