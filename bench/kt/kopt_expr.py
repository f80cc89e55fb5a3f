"""kopt's integer expressions in Python, so the Kernel Tuner scripts can turn a template's
constraints and launch dimensions into Kernel Tuner restrictions and grid divisors.

Same grammar and semantics as src/core/expr.c (include/kopt/expr.h): C precedence,
ternary `c ? a : b`, `|| &&`, `== != < <= > >=`, `+ -`, `* / %` (C division: truncates
toward zero), unary `- + !`, parentheses, integer literals, names, and the functions
min, max, cdiv, pow2 (1 when its argument is a power of two), log2 (floor), abs, align.
Division by zero raises ZeroDivisionError, an unknown name KeyError.
"""
import re

_TOKEN = re.compile(r"\s*(?:(0[xX][0-9a-fA-F]+|\d+)|([A-Za-z_]\w*)|(\|\||&&|==|!=|<=|>=|[-+*/%()<>!?:,]))")


def _tokens(text):
    pos, out = 0, []
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise SyntaxError(f"expression '{text}': unexpected character at column {pos + 1}")
        if m.group(1):
            out.append(("num", int(m.group(1), 0)))
        elif m.group(2):
            out.append(("name", m.group(2)))
        else:
            out.append(("op", m.group(3)))
        pos = m.end()
    out.append(("end", None))
    return out


def _cdiv(a, b):
    if b <= 0:
        raise ZeroDivisionError("cdiv by a value <= 0")
    return -(-a // b) if a >= 0 else _cdiv_trunc(a, b)


def _cdiv_trunc(a, b):
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _log2(a):
    if a <= 0:
        raise ZeroDivisionError("log2 of a value <= 0")
    return a.bit_length() - 1


def _align(a, b):
    if b <= 0:
        raise ZeroDivisionError("align to a value <= 0")
    return (a + b - 1) // b * b


_FUNCS = {
    "min": (2, min), "max": (2, max), "cdiv": (2, _cdiv),
    "pow2": (1, lambda a: int(a > 0 and (a & (a - 1)) == 0)),
    "log2": (1, _log2), "abs": (1, abs), "align": (2, _align),
}


class _Parser:
    """Builds a closure tree once; evaluating it with an environment is then cheap."""

    def __init__(self, text):
        self.text, self.toks, self.i = text, _tokens(text), 0

    def peek(self):
        return self.toks[self.i]

    def accept(self, op):
        if self.toks[self.i] == ("op", op):
            self.i += 1
            return True
        return False

    def expect(self, op):
        if not self.accept(op):
            raise SyntaxError(f"expression '{self.text}': expected '{op}'")

    def parse(self):
        f = self.ternary()
        if self.peek()[0] != "end":
            raise SyntaxError(f"expression '{self.text}': unexpected '{self.peek()[1]}'")
        return f

    def ternary(self):
        c = self.lor()
        if self.accept("?"):
            a = self.ternary()
            self.expect(":")
            b = self.ternary()
            return lambda e: a(e) if c(e) else b(e)
        return c

    def _binary(self, sub, ops):
        left = sub()
        while True:
            for op, fn in ops:
                if self.accept(op):
                    right = sub()
                    left = (lambda l, r, fn: lambda e: fn(l(e), r(e)))(left, right, fn)
                    break
            else:
                return left

    def lor(self):
        return self._binary(self.land, [("||", lambda a, b: int(bool(a) or bool(b)))])

    def land(self):
        return self._binary(self.eq, [("&&", lambda a, b: int(bool(a) and bool(b)))])

    def eq(self):
        return self._binary(self.rel, [("==", lambda a, b: int(a == b)), ("!=", lambda a, b: int(a != b))])

    def rel(self):
        return self._binary(self.add, [("<=", lambda a, b: int(a <= b)), (">=", lambda a, b: int(a >= b)),
                                       ("<", lambda a, b: int(a < b)), (">", lambda a, b: int(a > b))])

    def add(self):
        return self._binary(self.mul, [("+", lambda a, b: a + b), ("-", lambda a, b: a - b)])

    def mul(self):
        def cdivide(a, b):
            if b == 0:
                raise ZeroDivisionError("division by zero")
            return _cdiv_trunc(a, b)

        def cmod(a, b):
            if b == 0:
                raise ZeroDivisionError("division by zero")
            return a - b * _cdiv_trunc(a, b)
        return self._binary(self.unary, [("*", lambda a, b: a * b), ("/", cdivide), ("%", cmod)])

    def unary(self):
        if self.accept("-"):
            f = self.unary()
            return lambda e: -f(e)
        if self.accept("+"):
            return self.unary()
        if self.accept("!"):
            f = self.unary()
            return lambda e: int(not f(e))
        return self.primary()

    def primary(self):
        kind, val = self.peek()
        if self.accept("("):
            f = self.ternary()
            self.expect(")")
            return f
        if kind == "num":
            self.i += 1
            return lambda e: val
        if kind == "name":
            self.i += 1
            if self.accept("("):
                if val not in _FUNCS:
                    raise SyntaxError(f"expression '{self.text}': unknown function '{val}'")
                nargs, fn = _FUNCS[val]
                args = [self.ternary()]
                for _ in range(nargs - 1):
                    self.expect(",")
                    args.append(self.ternary())
                self.expect(")")
                return lambda e: fn(*[a(e) for a in args])
            return lambda e: e[val]
        raise SyntaxError(f"expression '{self.text}': expected a value")


def compile_expr(text):
    """A function env -> int for the kopt expression `text` (env: a dict of names)."""
    return _Parser(str(text)).parse()


def names_in(text):
    """The names (not functions) an expression uses."""
    toks = _tokens(str(text))
    return [v for i, (k, v) in enumerate(toks) if k == "name" and toks[i + 1] != ("op", "(")]


def evaluate(text, env):
    return compile_expr(text)(env)
