"""The AST rewrite that makes a scripted function's data-dependent control flow capturable.

Eagerly, the rewritten function does exactly what the original does.  What changes is
that each ``if`` and ``while`` first asks the runtime (`ember.jit._runtime`) whether its
condition is *symbolic* -- a tensor whose value is not known because the program is being
captured.  Then, instead of Python branching (which would need the value), the statement
runs as a higher-order op: ``if`` becomes ``ember.cond(pred, true_fn, false_fn, ...)`` and
``while`` becomes ``ember.while_loop(cond_fn, body_fn, carried)``, with the branches and the
loop body turned into nested functions.  So both branches of a tensor ``if`` survive in the
saved program.

The nested functions take the variables their statements assign (passed in, since a nested
function cannot rebind its parent's locals) and return them; they read everything else
through the closure.  Before rewriting, early returns are normalised: in
``if c: return a`` followed by more statements, those statements move into the ``else``
branch (the same meaning in Python), so an ``if`` whose branches both return becomes
``return cond(...)``.  An ``if``/``while`` whose branches ``break``, ``continue`` or return
in other places keeps its Python meaning, and raises a clear error (with file:line) only
if its condition turns out symbolic during a capture.
"""
import ast

__all__ = ["rewrite_function", "RT"]

RT = "__ember_jit_rt"  # the runtime module's name in the rewritten function's globals


def _always_returns(stmts):
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, (ast.Return, ast.Raise)):
        return True
    if isinstance(last, ast.If):
        return _always_returns(last.body) and _always_returns(last.orelse)
    return False


def normalize_returns(stmts):
    """Move the statements after an ``if`` one of whose branches always returns into its
    other branch (recursively); the same meaning, with returns only at the ends."""
    out = []
    i = 0
    while i < len(stmts):
        s = stmts[i]
        _normalize_children(s)
        if isinstance(s, ast.If) and i + 1 < len(stmts):
            rest = stmts[i + 1:]
            if _always_returns(s.body) and not _always_returns(s.orelse):
                s.orelse = normalize_returns(s.orelse + rest)
                out.append(s)
                return out
            if _always_returns(s.orelse) and not _always_returns(s.body) and s.orelse:
                s.body = normalize_returns(s.body + rest)
                out.append(s)
                return out
        out.append(s)
        i += 1
    return out


def _normalize_children(s):
    if isinstance(s, ast.If):
        s.body = normalize_returns(s.body)
        s.orelse = normalize_returns(s.orelse)
    elif isinstance(s, (ast.For, ast.While, ast.With)):
        s.body = normalize_returns(s.body)


class _Assigned(ast.NodeVisitor):
    """Names a block assigns (not inside nested functions), in first-seen order."""

    def __init__(self):
        self.names = []

    def add(self, name):
        if name not in self.names:
            self.names.append(name)

    def visit_Name(self, node):
        if isinstance(node.ctx, (ast.Store, ast.Del)):
            self.add(node.id)

    def visit_FunctionDef(self, node):
        self.add(node.name)

    def visit_Lambda(self, node):
        pass

    def visit_ListComp(self, node):
        pass  # comprehension variables are the comprehension's own

    visit_DictComp = visit_SetComp = visit_GeneratorExp = visit_ListComp


def assigned_names(stmts):
    v = _Assigned()
    for s in stmts:
        v.visit(s)
    return [n for n in v.names if not n.startswith("__ember_jit")]


class _Escapes(ast.NodeVisitor):
    """Whether a block has break/continue (outside its own loops) or return."""

    def __init__(self):
        self.loop_depth = 0
        self.found = None

    def visit_Return(self, node):
        self.found = self.found or node

    def visit_Break(self, node):
        if self.loop_depth == 0:
            self.found = self.found or node

    visit_Continue = visit_Break

    def _loop(self, node):
        self.loop_depth += 1
        self.generic_visit(node)
        self.loop_depth -= 1

    visit_For = visit_While = _loop

    def visit_FunctionDef(self, node):
        pass


def _escape(stmts):
    v = _Escapes()
    for s in stmts:
        v.visit(s)
    return v.found


def _rt(attr):
    return ast.Attribute(value=ast.Name(id=RT, ctx=ast.Load()), attr=attr, ctx=ast.Load())


def _call(func, args):
    return ast.Call(func=func, args=args, keywords=[])


def _name(n, store=False):
    return ast.Name(id=n, ctx=ast.Store() if store else ast.Load())


def _names_tuple(names, store=False):
    return ast.Tuple(elts=[_name(n, store) for n in names], ctx=ast.Store() if store else
                     ast.Load())


def _def(name, params, body):
    args = ast.arguments(posonlyargs=[], args=[ast.arg(arg=p) for p in params], vararg=None,
                         kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])
    return ast.FunctionDef(name=name, args=args, body=body or [ast.Pass()], decorator_list=[],
                           returns=None, type_params=[])


def _current_values(names):
    """``RT.values(locals(), (names...))``: the names' current values, UNDEFINED if unset."""
    return _call(_rt("values"), [_call(_name("locals"), []),
                                 ast.Tuple(elts=[ast.Constant(n) for n in names],
                                           ctx=ast.Load())])


class _Rewriter(ast.NodeTransformer):
    def __init__(self, where):
        self.where = where  # node -> "file", line (for messages)
        self.count = 0

    def fresh(self, kind):
        self.count += 1
        return f"__ember_jit_{kind}_{self.count}"

    def visit_FunctionDef(self, node):
        return node  # nested functions run as Python

    def visit_If(self, node):
        self.generic_visit(node)
        k = self.fresh("pred")
        where = ast.Constant(self.where(node))
        returns = _always_returns(node.body) and _always_returns(node.orelse)
        blocker = None if returns else (_escape(node.body) or _escape(node.orelse))
        if returns:
            blocker = _nested_return(node.body) or _nested_return(node.orelse)
        if blocker is not None:
            symbolic = [ast.Expr(_call(_rt("unsupported"), [
                where, ast.Constant("an if statement whose branches break, continue or return "
                                    "before their end")]))]
        else:
            names = assigned_names(node.body + node.orelse)
            tname, fname = self.fresh("true"), self.fresh("false")
            tail = [] if returns else [ast.Return(_names_tuple(names))]
            tdef = _def(tname, names, node.body + tail)
            fdef = _def(fname, names, (node.orelse or []) + tail)
            call = _call(_rt("cond"), [_name(k), _name(tname), _name(fname),
                                       _current_values(names), where,
                                       ast.Constant(tuple(names)), ast.Constant(returns)])
            if returns:
                symbolic = [tdef, fdef, ast.Return(call)]
            elif names:
                symbolic = [tdef, fdef, ast.Assign(targets=[_names_tuple(names, True)],
                                                   value=call)]
            else:
                symbolic = [tdef, fdef, ast.Expr(call)]
        plain = ast.If(test=_name(k), body=node.body, orelse=node.orelse)
        return [ast.Assign(targets=[_name(k, True)], value=node.test),
                ast.If(test=_call(_rt("is_symbolic"), [_name(k), where]), body=symbolic,
                       orelse=[plain])]

    def visit_While(self, node):
        self.generic_visit(node)
        k = self.fresh("pred")
        first = self.fresh("first")
        where = ast.Constant(self.where(node))
        blocker = _escape(node.body)
        if blocker is not None:
            symbolic = [ast.Expr(_call(_rt("unsupported"), [
                where, ast.Constant("a while loop whose body breaks, continues or returns")]))]
        else:
            names = assigned_names(node.body)
            cname, bname = self.fresh("cond"), self.fresh("body")
            cdef = _def(cname, names, [ast.Return(node.test)])
            bdef = _def(bname, names, node.body + [ast.Return(_names_tuple(names))])
            call = _call(_rt("while_loop"), [_name(cname), _name(bname),
                                             _current_values(names), where,
                                             ast.Constant(tuple(names))])
            symbolic = [cdef, bdef] + ([ast.Assign(targets=[_names_tuple(names, True)],
                                                   value=call)] if names else [ast.Expr(call)])
        # the eager loop tests the value already computed first, then re-evaluates the test
        test = ast.IfExp(test=_call(_rt("first"), [_name(first)]), body=_name(k),
                         orelse=node.test)
        plain = [ast.Assign(targets=[_name(first, True)], value=ast.List(
                     elts=[ast.Constant(True)], ctx=ast.Load())),
                 ast.While(test=test, body=node.body, orelse=[])]
        return [ast.Assign(targets=[_name(k, True)], value=node.test),
                ast.If(test=_call(_rt("is_symbolic"), [_name(k), where, ast.Constant("while")]),
                       body=symbolic, orelse=plain)]


def _nested_return(stmts):
    """A return that is not the last statement of a branch (in a loop, say): such an if
    cannot become ``return cond(...)``."""
    for s in stmts[:-1]:
        found = _escape([s])
        if found is not None:
            return found
    last = stmts[-1] if stmts else None
    if isinstance(last, ast.If):
        return _nested_return(last.body) or _nested_return(last.orelse)
    if isinstance(last, (ast.For, ast.While, ast.With)):
        return _escape([last])
    return None


def rewrite_function(parsed):
    """The rewritten ``def`` (a module AST holding a factory, see `_compile`) of a
    `ParsedFunction`."""
    fdef = parsed.tree
    fdef.decorator_list = []
    fdef.body = normalize_returns(fdef.body)

    def where(node):
        r = parsed.where(node)
        return f'File "{r.filename}", line {r.lineno}'

    rw = _Rewriter(where)
    new_body = []
    for s in fdef.body:
        r = rw.visit(s)
        new_body.extend(r if isinstance(r, list) else [r])
    fdef.body = new_body
    return fdef
