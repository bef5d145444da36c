"""benchmarks.run: one workload measured for ember and torch, written as JSON with the
clock used and each BLAS library's kernel set."""
import json

from benchmarks import run


def test_cpu_time_run_writes_results_and_blas_info(tmp_path, capsys):
    out = tmp_path / "r.json"
    run.main(["--only", "add_small", "--quick", "--cpu-time", "--json", str(out)])
    data = json.loads(out.read_text())
    assert data["meta"]["clock"] == "cpu"
    (row,) = data["results"]
    assert row["workload"] == "add_small" and row["ember"] > 0 and row["torch"] > 0
    assert abs(row["ratio"] - row["ember"] / row["torch"]) < 1e-12
    blas = data["meta"]["blas"]
    assert "OPENBLAS_CORETYPE" in blas
    assert blas["cpu_capability"] in ("DEFAULT", "AVX2", "AVX512")
    assert any("openblas" in lib["filepath"].lower() for lib in blas["libraries"])
    assert "add_small" in capsys.readouterr().out
