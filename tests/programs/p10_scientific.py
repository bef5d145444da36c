"""Scientific computing: polynomial least squares (lstsq, normal equations via
cholesky, QR), spectral low-pass filtering with rfft/irfft, fitting a signal's
parameters by gradient descent through torch.fft.rfft and torch.linalg.solve,
eigen-decomposition, SVD low-rank approximation and a complex-valued loss."""
import math

import numpy as np
import torch


def main():
    torch.set_default_dtype(torch.float64)
    rng = np.random.default_rng(0)

    # --- least squares polynomial fit, three ways
    t = torch.linspace(-1, 1, 50)
    y = 1.0 - 2.0 * t + 0.5 * t ** 3 + torch.from_numpy(0.01 * rng.standard_normal(50))
    V = torch.vander(t, N=4, increasing=True)
    c_lstsq = torch.linalg.lstsq(V, y.unsqueeze(-1)).solution.squeeze(-1)
    L = torch.linalg.cholesky(V.T @ V)
    c_chol = torch.cholesky_solve((V.T @ y).unsqueeze(-1), L).squeeze(-1)
    Q, R = torch.linalg.qr(V)
    c_qr = torch.linalg.solve_triangular(R, (Q.T @ y).unsqueeze(-1), upper=True).squeeze(-1)
    print(f"= coeffs {' '.join(f'{v:.6f}' for v in c_lstsq.tolist())}")
    print(f"ok methods_agree {torch.allclose(c_lstsq, c_chol) and torch.allclose(c_lstsq, c_qr)}")
    print(f"= residual {torch.linalg.norm(V @ c_lstsq - y).item():.6f}")
    print(f"= cond {torch.linalg.cond(V).item():.4f}")

    # --- spectral low-pass filter
    n = 256
    time = torch.arange(n) / n
    clean = torch.sin(2 * math.pi * 5 * time) + 0.5 * torch.cos(2 * math.pi * 12 * time)
    noisy = clean + torch.from_numpy(0.3 * rng.standard_normal(n))
    spec = torch.fft.rfft(noisy)
    freqs = torch.fft.rfftfreq(n, d=1.0 / n)
    filtered = torch.fft.irfft(spec * (freqs <= 20), n=n)
    peaks = spec.abs().topk(2).indices.sort().values
    print(f"= peaks {peaks.tolist()}")
    print(f"= err_noisy {torch.mean((noisy - clean) ** 2).item():.6f} err_filtered {torch.mean((filtered - clean) ** 2).item():.6f}")
    print(f"ok filter_helps {torch.mean((filtered - clean) ** 2) < 0.25 * torch.mean((noisy - clean) ** 2)}")
    print(f"= parseval {(noisy.pow(2).sum() - (torch.fft.fft(noisy).abs() ** 2).sum() / n).abs().item() < 1e-9}")

    # --- fit amplitude/phase of a sinusoid by matching its spectrum (autograd through rfft)
    target = torch.fft.rfft(1.3 * torch.sin(2 * math.pi * 5 * time + 0.4))
    amp = torch.tensor(1.0, requires_grad=True)
    phase = torch.tensor(0.0, requires_grad=True)
    opt = torch.optim.Adam([amp, phase], lr=0.05)
    for _ in range(200):
        sig = amp * torch.sin(2 * math.pi * 5 * time + phase)
        loss = (torch.fft.rfft(sig) - target).abs().pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"= fitted {amp.item():.4f} {phase.item():.4f}")

    # --- learn a diffusion coefficient through linalg.solve (implicit heat equation)
    m = 20
    lap = torch.diag(torch.full((m,), -2.0)) + torch.diag(torch.ones(m - 1), 1) + torch.diag(torch.ones(m - 1), -1)
    u0 = torch.exp(-((torch.arange(m) - m / 2) ** 2) / 8.0)

    def simulate(kappa, steps=5):
        u = u0
        A = torch.eye(m) - kappa * lap
        for _ in range(steps):
            u = torch.linalg.solve(A, u)
        return u

    observed = simulate(torch.tensor(0.7))
    kappa = torch.tensor(0.2, requires_grad=True)
    trace = []
    for it in range(30):
        loss = ((simulate(kappa) - observed) ** 2).sum()
        g, = torch.autograd.grad(loss, kappa)
        kappa = (kappa - 0.5 * g).detach().requires_grad_()
        trace.append(kappa.item())
    print(f"= kappa {trace[0]:.6f} {trace[4]:.6f} {kappa.item():.5f}")
    print(f"= gradcheck_solve {torch.autograd.gradcheck(lambda k: simulate(k, 2), (torch.tensor(0.5, requires_grad=True),))}")

    # --- eigen / SVD
    B = torch.from_numpy(rng.standard_normal((6, 6)))
    S = B @ B.T + torch.eye(6)
    evals, evecs = torch.linalg.eigh(S)
    print(f"= eigvals {' '.join(f'{v:.5f}' for v in evals.tolist()[:3])}")
    print(f"ok eigh_reconstructs {torch.allclose(evecs @ torch.diag(evals) @ evecs.T, S)}")
    U, sv, Vh = torch.linalg.svd(B)
    low = U[:, :2] @ torch.diag(sv[:2]) @ Vh[:2]
    print(f"= svd_rank2_err {torch.linalg.matrix_norm(B - low).item():.5f} {torch.sqrt((sv[2:] ** 2).sum()).item():.5f}")
    print(f"= slogdet {torch.linalg.slogdet(S).logabsdet.item():.5f} det_sign {torch.linalg.det(B).sign().item()}")
    print(f"= inv_err {torch.linalg.norm(torch.linalg.inv(S) @ S - torch.eye(6)).item() < 1e-10}")

    # --- a complex loss: gradient wrt a complex filter
    h = torch.zeros(n // 2 + 1, dtype=torch.complex128, requires_grad=True)
    out = torch.fft.irfft(torch.fft.rfft(noisy) * (1 + h), n=n)
    loss = ((out - clean) ** 2).sum()
    loss.backward()
    print(f"= complex_grad {h.grad.abs().sum().item():.4f} {h.grad.dtype}")


if __name__ == "__main__":
    main()
