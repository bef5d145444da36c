"""jit.script: eager meaning, the TorchScript subset check, argument types, programs with
data-dependent control flow kept as cond/while_loop.  torch.jit.script is the oracle for
error types and for values."""
import inspect
import io
import re

import numpy as np
import pytest
import torch

import ember
from ember import jit
from ember.jit.frontend import NotSupportedError

from . import models as M

# torch 2.13 deprecates torch.jit; the oracle's warning is not under test
pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit:DeprecationWarning")


def _t(e):
    return torch.from_numpy(np.array(e.detach().detach().numpy()))


def _e(t):
    return ember.tensor(t.detach().detach().numpy())


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_scripted_function_follows_both_branches(sign):
    s = jit.script(M.branchy)
    x, y = ember.randn(5, 5) * sign, ember.randn(5, 5)
    ts = torch.jit.script(M.branchy)
    np.testing.assert_array_equal(s(x, y).detach().numpy(), ts(_t(x), _t(y)).detach().numpy())


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_variables_assigned_in_branches(sign):
    s = jit.script(M.assign_in_branches)
    x, y = ember.randn(3, 2).abs() * sign, ember.randn(3, 2)
    want = torch.jit.script(M.assign_in_branches)(_t(x), _t(y))
    np.testing.assert_allclose(s(x, y).detach().numpy(), want.numpy(), rtol=1e-6)


def test_while_loop_and_scalar_arguments():
    s = jit.script(M.double_until)
    x = ember.tensor([0.1, -0.2])
    want = torch.jit.script(M.double_until)(_t(x), 50.0)
    np.testing.assert_allclose(s(x, 50.0).detach().numpy(), want.numpy(), rtol=1e-6)


def test_python_control_flow_on_scalars_and_containers():
    s = jit.script(M.python_control)
    x, o = ember.randn(3), ember.randn(3)
    got = s(x, 3, [True, False, True], o)
    np.testing.assert_allclose(got.numpy(), ((x + 0 + 2) * o).detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(s(x, 2, [False, True]).detach().numpy(), (x + 1).detach().numpy(), rtol=1e-6)


def test_argument_types_are_checked_like_torch():
    def f2(x, y):
        return x + y
    s = jit.script(f2)
    with pytest.raises(RuntimeError) as ours:
        s(ember.randn(5, 5), 3)
    with pytest.raises(RuntimeError) as theirs:
        torch.jit.script(M.branchy)(torch.randn(2), 3)
    assert "Expected a value of type 'Tensor (inferred)' for argument 'y' but instead found " \
           "type 'int'" in str(ours.value)
    assert "Expected a value of type 'Tensor (inferred)' for argument 'y' but instead found " \
           "type 'int'" in str(theirs.value)
    assert "Declaration: f2(Tensor x, Tensor y) -> Tensor" in str(ours.value)
    with pytest.raises(RuntimeError, match="Expected a value of type 'List\\[bool\\]' for "
                                           "argument 'flags'"):
        jit.script(M.python_control)(ember.randn(2), 1, [1])


def _line_of(fn, needle):
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, l in enumerate(lines) if needle in l)


@pytest.mark.parametrize("name,needle,message,torch_type", [
    ("uses_try", "try:", "try blocks aren't supported", "UnsupportedNodeError"),
    ("uses_yield", "yield x", "yield statements aren't supported", "UnsupportedNodeError"),
    ("uses_lambda", "= lambda", "Lambda aren't supported", "UnsupportedNodeError"),
    ("uses_kwargs", "**kwargs", "can't take variable number of arguments", "NotSupportedError"),
    ("uses_varargs", "*rest", "can't take variable number of arguments", "NotSupportedError"),
    ("uses_global", "global _G", "global variables aren't supported", "UnsupportedNodeError"),
    ("uses_set", "{1, 2}", "set literals aren't supported", "UnsupportedNodeError"),
    ("uses_nested_def", "def inner", "function definitions aren't supported",
     "UnsupportedNodeError"),
    ("uses_match", "match n:", "Match aren't supported", "UnsupportedNodeError"),
    ("uses_dict_expansion", "**d", "Dict expansion", "NotSupportedError"),
])
def test_constructs_outside_the_subset_name_file_and_line(name, needle, message, torch_type):
    fn = getattr(M, name)
    with pytest.raises(NotSupportedError) as ours:
        jit.script(fn)
    with pytest.raises(Exception) as theirs:
        torch.jit.script(fn)
    assert type(theirs.value).__name__ == torch_type
    assert type(ours.value).__name__ == torch_type
    assert not isinstance(ours.value, RuntimeError)  # torch's is an Exception, not an error
    text = str(ours.value)
    assert message in text
    assert f'File "{inspect.getsourcefile(fn)}", line {_line_of(fn, needle)}' in text


def test_starred_call_is_rejected_with_its_line():
    with pytest.raises(RuntimeError, match="cannot statically infer the expected size") as e:
        jit.script(M.uses_star_call)
    assert f"line {_line_of(M.uses_star_call, '*shape')}" in str(e.value)
    with pytest.raises(RuntimeError, match="cannot statically infer the expected size"):
        torch.jit.script(M.uses_star_call)
    with pytest.raises(RuntimeError, match="cannot statically infer the expected size") as e:
        jit.script(M.uses_star_list)
    assert f"line {_line_of(M.uses_star_list, '[*xs]')}" in str(e.value)
    with pytest.raises(RuntimeError, match="cannot statically infer the expected size"):
        torch.jit.script(M.uses_star_list)


def test_module_method_outside_subset_fails_at_script_time():
    with pytest.raises(NotSupportedError, match=r"try blocks aren't supported") as e:
        jit.script(M.BadMethod())
    assert f"line {_line_of(M.BadMethod.forward, 'try:')}" in str(e.value)


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_scripted_module_equals_eager_on_both_branches(sign):
    m = M.Net().eval()
    s = jit.script(m)
    x = ember.randn(3, 4).abs() * sign
    np.testing.assert_array_equal(s(x).detach().numpy(), m(x).detach().numpy())
    np.testing.assert_array_equal(s(x, 2).detach().numpy(), m(x, 2).detach().numpy())
    np.testing.assert_array_equal(s(x, shift=3).detach().numpy(), m(x, shift=3).detach().numpy())


def test_scripted_module_shares_state_and_submodules_are_scripted():
    m = M.Net().eval()
    s = jit.script(m)
    assert [n for n, _ in s.named_parameters()] == [n for n, _ in m.named_parameters()]
    assert list(s.state_dict()) == list(m.state_dict())
    assert s.gate.lin.weight is m.gate.lin.weight
    assert isinstance(s, jit.RecursiveScriptModule) and isinstance(s, jit.ScriptModule)
    assert isinstance(s.gate, jit.ScriptModule)  # a user submodule is scripted too
    assert s.original_name == "Net"
    with ember.no_grad():
        m.gate.lin.weight.mul_(2)  # shared, not copied
    x = ember.randn(3, 4).abs()
    np.testing.assert_array_equal(s(x).detach().numpy(), m(x).detach().numpy())


def test_export_ignore_unused():
    m = M.Net().eval()
    s = jit.script(m)
    x = ember.randn(2, 4)
    np.testing.assert_array_equal(s.encode(x).detach().numpy(), m.encode(x).detach().numpy())
    assert s.debug(x) == x.tolist()  # ignored: plain Python
    with pytest.raises(RuntimeError, match=r"training_only\(\) is marked @ember.jit.unused"):
        s.training_only(x)
    assert m.training_only(x) is x  # the Python module is unchanged


def test_program_keeps_both_branches_and_the_loop():
    s = jit.script(M.Net().eval())
    s(ember.randn(3, 4))
    s.encode(ember.randn(2, 4))
    code = s.code
    assert "ember.ops.cond(" in code and "ember.ops.while_loop(" in code
    assert "def cond_true_graph" in code and "def while_loop_body_graph" in code
    graph = str(s.graph)
    assert "ember::cond(" in graph and "ember::while_loop(" in graph
    assert "%x : Float32(s0, 4)" in graph  # sizes are dynamic
    assert "ember::linear" in str(s.encode.graph)


def test_program_needs_a_first_call():
    s = jit.script(M.Net().eval())
    assert "def forward(self, x, shift: int = 1):" in s.code  # the source, before a call
    with pytest.raises(RuntimeError, match=r"forward\(\) has no program yet.*call it once on an "
                                           r"example input.*ember.jit.trace"):
        s.graph
    with pytest.raises(RuntimeError, match="call it once"):
        jit.save(s, io.BytesIO())


def test_is_scripting_is_true_during_capture():
    seen = []

    def probe(x):
        seen.append(jit.is_scripting())
        return x + 1
    s = jit.script(probe)
    s(ember.ones(2))
    assert seen == [False]  # a scripted function runs as Python
    s.graph
    assert len(seen) > 1 and all(seen[1:])  # the capture ran it with is_scripting() True
    assert not jit.is_scripting()


def test_dict_and_tuple_inputs_and_outputs():
    s = jit.script(M.Pair())
    x = ember.randn(3)
    d = {"a": ember.randn(3), "b": ember.randn(3)}
    a, b = s(x, d)
    np.testing.assert_allclose(a.numpy(), (x + d["a"]).detach().numpy())
    np.testing.assert_allclose(b.numpy(), (x * d["b"]).detach().numpy())
    assert "ember::mul" in str(s.graph)


def test_script_of_scriptmodule_and_bad_objects():
    s = jit.script(M.Net())
    assert jit.script(s) is s
    with pytest.raises(RuntimeError, match="inherits from nn.Module, pass an instance"):
        jit.script(M.Pair)  # a module class, not an instance (torch's error)

    class Point:  # a TorchScript class: scripting returns the class, as torch's
        def __init__(self, x: int):
            self.x = x
    assert jit.script(Point) is Point and Point(3).x == 3
    with pytest.raises(RuntimeError, match="cannot compile an object of type int"):
        jit.script(3)


def test_annotations_pass_through():
    from typing import List
    assert jit.annotate(List[int], []) == []
    assert jit.isinstance([ember.ones(1)], List[ember.Tensor])
    assert not jit.isinstance([1], List[ember.Tensor])
    assert torch.jit.isinstance([torch.ones(1)], List[torch.Tensor])
    fut = jit.fork(lambda a, b: a * b, ember.tensor(2.0), 3)
    assert float(jit.wait(fut)) == 6.0
    assert re.search("Final", repr(jit.Final))


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_subclass_of_an_ember_module_with_super(sign):
    m = M.ReluLinear(3, 2)
    s = jit.script(m)
    x = ember.randn(4, 3) * sign
    np.testing.assert_array_equal(s(x).detach().numpy(), m(x).detach().numpy())
    assert s.in_features == 3 and s.weight is m.weight
    assert "ember.ops.cond(" in s.code


def test_unknown_return_annotation():
    with pytest.raises(RuntimeError, match="Unknown type name 'set'") as e:
        jit.script(M.returns_set)
    assert f"line {_line_of(M.returns_set, '-> set')}" in str(e.value)
    with pytest.raises(RuntimeError, match="Unknown type name 'set'"):
        torch.jit.script(M.returns_set)


def test_script_of_embers_own_modules():
    m = ember.nn.Sequential(ember.nn.Linear(4, 8), ember.nn.ReLU(), ember.nn.Linear(8, 2))
    s = jit.script(m)
    x = ember.randn(3, 4)
    np.testing.assert_array_equal(s(x).detach().numpy(), m(x).detach().numpy())
    assert [n for n, _ in s.named_parameters()] == ["0.weight", "0.bias", "2.weight", "2.bias"]
    assert isinstance(s, jit.RecursiveScriptModule) and s.original_name == "Sequential"
    assert "ember.ops.linear(input_1, self.get_parameter('0.weight'), " \
           "self.get_parameter('0.bias'))" in s.code


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_called_functions_are_scripted_too(sign):
    s = jit.script(M.calls_a_helper)
    x, y = ember.randn(3) * sign, ember.randn(3)
    np.testing.assert_array_equal(s(x, y).numpy(), M.calls_a_helper(x, y).numpy())
    assert "ember.ops.cond(" in s.code  # the helper's tensor if is in the program
    with pytest.raises(NotSupportedError, match="try blocks") as e:
        jit.script(M.calls_a_bad_helper)
    assert f"line {_line_of(M._bad_helper, 'try:')}" in str(e.value)
    with pytest.raises(Exception, match="try blocks"):
        torch.jit.script(M.calls_a_bad_helper)


def test_example_inputs_type_the_arguments_and_give_the_program():
    def add(x, y):
        return x + y
    s = jit.script(add, example_inputs=[(ember.ones(2), 3)])
    assert "ember::add" in str(s.graph)  # no call needed: the example is the capture's
    np.testing.assert_array_equal(s(ember.ones(2), 3).numpy(), [4.0, 4.0])
    with pytest.raises(RuntimeError, match="Expected a value of type 'int \\(inferred\\)' for "
                                           "argument 'y' but instead found type 'Tensor'"):
        s(ember.ones(2), ember.ones(2))
    m = M.Plain().eval()
    sm = jit.script(m, example_inputs={m: [(ember.randn(3, 4),)]})
    assert "ember::linear" in str(sm.graph)


@pytest.mark.parametrize("shift", [2.0, 0.5, -0.5, -20.0])
def test_elif_chains_and_early_returns_survive_in_the_program(shift):
    s = jit.script(M.three_way)
    s(ember.ones(4) * 2)
    graph = str(s.graph)
    assert graph.count("ember::cond(") >= 3  # if / elif / the later if
    x = ember.ones(4) * shift
    loaded = jit.load(_saved(s))
    np.testing.assert_array_equal(loaded(x).numpy(), M.three_way(x).numpy())
    np.testing.assert_array_equal(s(x).numpy(), M.three_way(x).numpy())
    want = torch.jit.script(M.three_way)(torch.ones(4) * shift)
    np.testing.assert_array_equal(s(x).numpy(), want.numpy())


def _saved(s):
    buf = io.BytesIO()
    jit.save(s, buf)
    buf.seek(0)
    return buf


def test_return_annotations_are_enforced_like_torchs_interpreter():
    s = jit.script(M.wrong_return)
    assert s(ember.tensor(2)) == 4 and type(s(ember.tensor(2))) is int
    with pytest.raises(RuntimeError, match="Cannot input a tensor of dimension other than 0 as "
                                           "a scalar argument"):
        s(ember.ones(2))
    with pytest.raises(RuntimeError, match="Cannot input a tensor of type Float as an "
                                           "integral argument"):
        s(ember.tensor(2.0))
    ts = torch.jit.script(M.wrong_return)
    assert ts(torch.tensor(2)) == 4
    with pytest.raises(RuntimeError, match="Cannot input a tensor of type Float as an "
                                           "integral argument"):
        ts(torch.tensor(2.0))
    with pytest.raises(RuntimeError, match="Cannot input a tensor of dimension other than 0"):
        ts(torch.ones(2))


def test_hooks_of_the_scripted_module_are_its_own():
    m = M.Plain().eval()
    s = jit.script(m)
    calls = []
    s.register_forward_hook(lambda mod, inp, out: calls.append("scripted"))
    x = ember.randn(2, 4)
    m(x)
    assert calls == []
    s(x)
    assert calls == ["scripted"]
