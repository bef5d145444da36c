"""ember's main demo: a small tensor program with autograd, written as PyTorch code."""
import ember as torch

torch.manual_seed(0) if hasattr(torch, "manual_seed") else None
x = torch.linspace(-2.0, 2.0, 5, requires_grad=True)
w = torch.tensor([0.5, -1.0, 2.0, 0.25, 1.5], requires_grad=True)

y = (w * x.tanh() + x.exp() / 4).sum()
y.backward()

print("x      =", x)
print("y      =", y)
print("dy/dx  =", x.grad)
print("dy/dw  =", w.grad)
# check against the closed form: d/dx = w * (1 - tanh(x)^2) + exp(x)/4
expected = w.detach() * (1 - x.detach().tanh() ** 2) + x.detach().exp() / 4
print("matches closed form:", torch.allclose(x.grad, expected))
