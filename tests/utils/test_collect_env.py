"""torch.utils.collect_env under ember: the report names ember's version and the same
system facts as torch's."""
import subprocess
import sys

import torch.utils.collect_env as tce

import ember
from ember.utils import collect_env as ece


def test_env_info_matches_torchs_system_facts():
    e, t = ece.get_env_info(), tce.get_env_info()
    assert e.torch_version == ember.__version__ and e.is_debug_build is False
    assert e.os == t.os and e.gcc_version == t.gcc_version and e.cmake_version == t.cmake_version
    assert e.libc_version == t.libc_version and e.python_platform == t.python_platform
    assert e.python_version.startswith(sys.version) and e.is_cuda_available is False
    assert "numpy==" in e.pip_packages


def test_pretty_report_and_main():
    text = ece.get_pretty_env_info()
    assert ember.__version__ in text and "Python version:" in text and "OS:" in text
    out = subprocess.run([sys.executable, "-m", "ember.utils.collect_env"], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.startswith("Collecting environment information")
