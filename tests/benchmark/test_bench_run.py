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


def test_threads_flag_runs_both_libraries_at_that_count(tmp_path, capsys):
    import torch
    out = tmp_path / "r.json"
    run.main(["--only", "add_small", "--quick", "--threads", "default", "--json", str(out)])
    meta = json.loads(out.read_text())["meta"]
    assert meta["clock"] == "wall"
    assert meta["num_threads"] == torch.get_num_threads() == meta["default_threads"]["torch"]
    assert meta["default_threads"]["ember"] >= 1
    assert f"{meta['num_threads']} threads:" in capsys.readouterr().out
    run.main(["--only", "add_small", "--quick", "--threads", "2", "--json", str(out)])
    assert json.loads(out.read_text())["meta"]["num_threads"] == 2
    assert torch.get_num_threads() == meta["default_threads"]["torch"]  # restored


def test_cpu_time_refuses_more_than_one_thread(capsys):
    import pytest
    for argv in (["--cpu-time", "--threads", "2"], ["--threads", "0"], ["--threads", "x"]):
        with pytest.raises(SystemExit) as e:
            run.main(["--only", "add_small", "--quick"] + argv)
        assert e.value.code == 2
    err = capsys.readouterr().err
    assert "--cpu-time" in err and "positive integer or 'default'" in err
