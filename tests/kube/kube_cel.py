"""A small subset of CEL for webhook matchConditions in the test API server.

Supported: literals (true, false, null, integers, double- or single-quoted strings, lists),
the variables object, oldObject and request, field selection (a.b) and indexing (a['k'], l[0]),
has(a.b), size(x) and x.size(), the string methods startsWith/endsWith/contains, the operators
! - == != < <= > >= in && || and the conditional a ? b : c, with parentheses. && and || absorb
errors as CEL does (false && error is false). Anything else is a compile error, so a
configuration using it is refused when it is loaded, never silently matched.
"""
import re

VARIABLES = ("object", "oldObject", "request")
METHODS = ("startsWith", "endsWith", "contains", "size")

TOKEN = re.compile(r"""\s*(?:
    (?P<num>\d+)(?![\w.])|
    (?P<str>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')|
    (?P<op>&&|\|\||==|!=|<=|>=|[!<>?:().,\[\]-])|
    (?P<id>[A-Za-z_][A-Za-z0-9_]*)
    )""", re.X)


class CelError(Exception):
    pass


class CompileError(CelError):
    pass


def _tokens(src):
    pos, out = 0, []
    while pos < len(src):
        if src[pos:].strip() == "":
            break
        m = TOKEN.match(src, pos)
        if not m or m.end() == pos:
            raise CompileError("Syntax error: unexpected %r at %d (outside the supported CEL "
                               "subset)" % (src[pos:].strip()[:10], pos))
        pos = m.end()
        kind = m.lastgroup
        out.append((kind, m.group(kind)))
    out.append(("end", ""))
    return out


def _unquote(s):
    body = s[1:-1]
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), body)


class _Parser:
    def __init__(self, src):
        self.t = _tokens(src)
        self.i = 0

    def peek(self):
        return self.t[self.i]

    def take(self, value=None):
        tok = self.t[self.i]
        if value is not None and tok[1] != value:
            raise CompileError("Syntax error: expected %r, found %r" % (value, tok[1] or "end"))
        self.i += 1
        return tok

    def parse(self):
        e = self.cond()
        if self.peek()[0] != "end":
            raise CompileError("Syntax error: unexpected %r" % self.peek()[1])
        return e

    def cond(self):
        c = self.orx()
        if self.peek()[1] == "?":
            self.take("?")
            a = self.cond()
            self.take(":")
            b = self.cond()
            return ("?", c, a, b)
        return c

    def orx(self):
        e = self.andx()
        while self.peek()[1] == "||":
            self.take()
            e = ("||", e, self.andx())
        return e

    def andx(self):
        e = self.rel()
        while self.peek()[1] == "&&":
            self.take()
            e = ("&&", e, self.rel())
        return e

    def rel(self):
        e = self.unary()
        op = self.peek()[1]
        if op in ("==", "!=", "<", "<=", ">", ">=", "in"):
            self.take()
            return (op, e, self.unary())
        return e

    def unary(self):
        op = self.peek()[1]
        if op == "!" and self.peek()[0] == "op":
            self.take()
            return ("!", self.unary())
        if op == "-" and self.peek()[0] == "op":
            self.take()
            return ("neg", self.unary())
        return self.member()

    def member(self):
        e = self.primary()
        while True:
            op = self.peek()[1]
            if op == "." and self.peek()[0] == "op":
                self.take()
                kind, name = self.take()
                if kind != "id":
                    raise CompileError("Syntax error: expected a field name after '.'")
                if self.peek()[1] == "(":
                    if name not in METHODS:
                        raise CompileError("undeclared reference to '%s' (outside the supported "
                                           "CEL subset)" % name)
                    args = self.args()
                    e = ("call", name, e, args)
                else:
                    e = ("sel", e, name)
            elif op == "[" and self.peek()[0] == "op":
                self.take()
                idx = self.cond()
                self.take("]")
                e = ("idx", e, idx)
            else:
                return e

    def args(self):
        self.take("(")
        out = []
        if self.peek()[1] != ")":
            out.append(self.cond())
            while self.peek()[1] == ",":
                self.take()
                out.append(self.cond())
        self.take(")")
        return out

    def primary(self):
        kind, v = self.take()
        if kind == "num":
            return ("lit", int(v))
        if kind == "str":
            return ("lit", _unquote(v))
        if kind == "op" and v == "(":
            e = self.cond()
            self.take(")")
            return e
        if kind == "op" and v == "[":
            items = []
            if self.peek()[1] != "]":
                items.append(self.cond())
                while self.peek()[1] == ",":
                    self.take()
                    items.append(self.cond())
            self.take("]")
            return ("list", items)
        if kind == "id":
            if v in ("true", "false"):
                return ("lit", v == "true")
            if v == "null":
                return ("lit", None)
            if v == "has":
                args = self.args()
                if len(args) != 1 or args[0][0] not in ("sel",):
                    raise CompileError("invalid argument to has() macro")
                return ("has", args[0])
            if v == "size":
                args = self.args()
                if len(args) != 1:
                    raise CompileError("size() takes one argument")
                return ("call", "size", args[0], [])
            if self.peek()[1] == "(":
                raise CompileError("undeclared reference to '%s' (outside the supported CEL "
                                   "subset)" % v)
            if v not in VARIABLES:
                raise CompileError("undeclared reference to '%s' (outside the supported CEL "
                                   "subset)" % v)
            return ("var", v)
        raise CompileError("Syntax error: unexpected %r" % (v or "end of expression"))


def compile_expr(src):
    if not isinstance(src, str) or not src.strip():
        raise CompileError("expression must not be empty")
    return _Parser(src).parse()


def _type(v):
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float)):
        return "number"
    if v is None:
        return "null"
    return type(v).__name__


def evaluate(ast, env):
    op = ast[0]
    if op == "lit":
        return ast[1]
    if op == "var":
        return env.get(ast[1])
    if op == "list":
        return [evaluate(x, env) for x in ast[1]]
    if op == "sel":
        base = evaluate(ast[1], env)
        if not isinstance(base, dict):
            raise CelError("no such key: %s" % ast[2])
        if ast[2] not in base:
            raise CelError("no such key: %s" % ast[2])
        return base[ast[2]]
    if op == "idx":
        base = evaluate(ast[1], env)
        k = evaluate(ast[2], env)
        if isinstance(base, dict):
            if k not in base:
                raise CelError("no such key: %s" % k)
            return base[k]
        if isinstance(base, list) and isinstance(k, int) and not isinstance(k, bool):
            if not 0 <= k < len(base):
                raise CelError("index out of bounds: %d" % k)
            return base[k]
        raise CelError("no such overload: index %s[%s]" % (_type(base), _type(k)))
    if op == "has":
        base = evaluate(ast[1][1], env)
        if isinstance(base, dict):
            return ast[1][2] in base
        raise CelError("no such overload: has() on %s" % _type(base))
    if op == "!":
        v = evaluate(ast[1], env)
        if not isinstance(v, bool):
            raise CelError("no such overload: !%s" % _type(v))
        return not v
    if op == "neg":
        v = evaluate(ast[1], env)
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise CelError("no such overload: -%s" % _type(v))
        return -v
    if op in ("&&", "||"):
        short = op == "||"
        vals, err = [], None
        for sub in (ast[1], ast[2]):
            try:
                v = evaluate(sub, env)
            except CelError as e:
                err = err or e
                continue
            if not isinstance(v, bool):
                err = err or CelError("no such overload: %s %s" % (_type(v), op))
                continue
            if v is short:
                return short
            vals.append(v)
        if err:
            raise err
        return not short
    if op == "?":
        c = evaluate(ast[1], env)
        if not isinstance(c, bool):
            raise CelError("no such overload: %s ? _ : _" % _type(c))
        return evaluate(ast[2] if c else ast[3], env)
    if op in ("==", "!="):
        a, b = evaluate(ast[1], env), evaluate(ast[2], env)
        eq = _type(a) == _type(b) and a == b
        return eq if op == "==" else not eq
    if op in ("<", "<=", ">", ">="):
        a, b = evaluate(ast[1], env), evaluate(ast[2], env)
        if _type(a) != _type(b) or _type(a) not in ("number", "str"):
            raise CelError("no such overload: %s %s %s" % (_type(a), op, _type(b)))
        return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]
    if op == "in":
        a, b = evaluate(ast[1], env), evaluate(ast[2], env)
        if isinstance(b, (list, dict)):
            return any(_type(a) == _type(x) and a == x for x in b)
        raise CelError("no such overload: %s in %s" % (_type(a), _type(b)))
    if op == "call":
        name, target = ast[1], evaluate(ast[2], env)
        args = [evaluate(a, env) for a in ast[3]]
        if name == "size":
            if isinstance(target, (str, list, dict)):
                return len(target)
            raise CelError("no such overload: size(%s)" % _type(target))
        if not isinstance(target, str) or len(args) != 1 or not isinstance(args[0], str):
            raise CelError("no such overload: %s.%s()" % (_type(target), name))
        return {"startsWith": target.startswith, "endsWith": target.endswith,
                "contains": target.__contains__}[name](args[0])
    raise CelError("unsupported expression")


def evaluate_bool(ast, env):
    v = evaluate(ast, env)
    if not isinstance(v, bool):
        raise CelError("expression must evaluate to a bool, got %s" % _type(v))
    return v
