"""benchmarks.run: workloads measured for ember and torch, each library in a worker process
of its own (or both in one with --same-process), written as JSON with the clock used, each
BLAS library's kernel set and the isolation."""
import json
import os

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


def test_isolated_run_measures_each_library_in_its_own_process(tmp_path, capsys):
    out = tmp_path / "r.json"
    run.main(["--only", "add_small", "--only", "mul_small_grad", "--quick", "--cpu-time",
              "--json", str(out)])
    data = json.loads(out.read_text())
    iso = data["meta"]["isolation"]
    assert iso["mode"] == "process"
    workers = iso["workers"]
    assert workers["ember"]["imported"] == ["ember"]
    assert workers["torch"]["imported"] == ["torch"]
    assert len({workers["ember"]["pid"], workers["torch"]["pid"], os.getpid()}) == 3
    assert [r["workload"] for r in data["results"]] == ["add_small", "mul_small_grad"]
    for row in data["results"]:
        assert row["ember"] > 0 and row["torch"] > 0
        assert row["ember_stats"]["replicates"] >= 1 and row["torch_stats"]["replicates"] >= 1
        assert abs(row["ratio"] - row["ember"] / row["torch"]) < 1e-12
    printed = capsys.readouterr().out
    assert "add_small" in printed and "mul_small_grad" in printed and "ember/torch" in printed


def test_same_process_mode_is_recorded(tmp_path):
    out = tmp_path / "r.json"
    run.main(["--only", "add_small", "--quick", "--cpu-time", "--same-process",
              "--json", str(out)])
    data = json.loads(out.read_text())
    assert data["meta"]["isolation"]["mode"] == "same-process"
    (row,) = data["results"]
    assert row["ember"] > 0 and row["torch"] > 0


def test_ember_worker_never_imports_torch(tmp_path):
    # the worker as the parent starts it; it reports the libraries it had imported at the
    # end, and a wrapper checks sys.modules once more after it returns
    import subprocess
    import sys
    out = tmp_path / "w.json"
    code = ("import sys; from benchmarks import run; "
            "run.main(sys.argv[1:]); print('TORCH' if 'torch' in sys.modules else 'CLEAN')")
    names = ["add_small", "chain10_backward", "rfft_64x4096", "linalg_solve_256"]
    proc = subprocess.run(
        [sys.executable, "-c", code, "--worker", "ember", "--worker-out", str(out),
         "--min-run-time", "0.01", *[a for n in names for a in ("--only", n)]],
        capture_output=True, text=True, check=True)
    assert proc.stdout.strip().splitlines()[-1] == "CLEAN"
    data = json.loads(out.read_text())
    assert data["record"]["imported"] == ["ember"]
    assert sorted(data["results"]) == sorted(names)
    for name in names:
        m = data["results"][name]
        assert m["description"] == "ember" and m["sub_label"] == name
        assert len(m["raw_times"]) >= 1 and all(t > 0 for t in m["raw_times"])
