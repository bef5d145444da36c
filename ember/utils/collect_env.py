"""``torch.utils.collect_env``: the environment report bug templates ask for
(``python -m ember.utils.collect_env``): ember, Python, OS, compilers, NumPy/SciPy and the
packages installed, gathered without importing anything heavy."""
import locale
import os
import platform
import re
import subprocess
import sys
from collections import namedtuple

__all__ = ["SystemEnv", "get_env_info", "get_pretty_env_info", "main", "run",
           "run_and_read_all", "run_and_parse_first_match", "get_gcc_version",
           "get_clang_version", "get_cmake_version", "get_os", "get_libc_version",
           "get_python_platform", "get_pip_packages", "get_cpu_info"]

SystemEnv = namedtuple("SystemEnv", [
    "torch_version", "is_debug_build", "gcc_version", "clang_version", "cmake_version",
    "os", "libc_version", "python_version", "python_platform", "is_cuda_available",
    "numpy_version", "scipy_version", "c_compiler", "pip_version", "pip_packages",
    "cpu_info"])


def run(command):
    """Run ``command`` (a shell string); returns (return code, stdout, stderr)."""
    try:
        p = subprocess.run(command, shell=True, capture_output=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as e:
        return 1, "", str(e)
    enc = locale.getpreferredencoding() or "utf-8"
    return p.returncode, p.stdout.decode(enc, "replace").strip(), \
        p.stderr.decode(enc, "replace").strip()


def run_and_read_all(run_lambda, command):
    """The whole output of ``command``, or None if it failed."""
    rc, out, _ = run_lambda(command)
    return out if rc == 0 else None


def run_and_parse_first_match(run_lambda, command, regex):
    """The first group of ``regex`` in ``command``'s output, or None."""
    rc, out, _ = run_lambda(command)
    if rc != 0:
        return None
    m = re.search(regex, out)
    return m.group(1) if m else None


def get_gcc_version(run_lambda):
    return run_and_parse_first_match(run_lambda, "gcc --version", r"gcc (.*)")


def get_clang_version(run_lambda):
    return run_and_parse_first_match(run_lambda, "clang --version", r"clang version (.*)")


def get_cmake_version(run_lambda):
    return run_and_parse_first_match(run_lambda, "cmake --version", r"cmake (.*)")


def get_os(run_lambda):
    system = platform.system()
    if system == "Linux":
        desc = run_and_parse_first_match(run_lambda, "cat /etc/*-release",
                                         r'PRETTY_NAME="(.*)"')
        return f"{desc or platform.platform()} ({platform.machine()})"
    if system == "Darwin":
        return f"macOS {platform.mac_ver()[0]} ({platform.machine()})"
    return f"{platform.platform()} ({platform.machine()})"


def get_libc_version():
    lib, ver = platform.libc_ver()
    return f"{lib}-{ver}" if lib else "N/A"


def get_python_platform():
    return platform.platform()


def get_pip_packages(run_lambda, patterns=None):
    """(pip version, the installed packages matching ``patterns``, one ``name==version`` a
    line)."""
    from importlib import metadata
    patterns = patterns or ("torch", "numpy", "scipy", "ember", "ml_dtypes", "mpi4py", "onnx")
    lines = sorted(f"{d.metadata['Name']}=={d.version}" for d in metadata.distributions()
                   if d.metadata["Name"] and any(p in d.metadata["Name"].lower()
                                                 for p in patterns))
    try:
        pip_version = metadata.version("pip")
    except metadata.PackageNotFoundError:
        pip_version = None
    return f"pip{sys.version_info.major} ({pip_version})" if pip_version else None, \
        "\n".join(lines)


def get_cpu_info(run_lambda):
    if platform.system() == "Linux":
        return run_and_read_all(run_lambda, "lscpu") or platform.processor()
    return platform.processor()


def _version(name):
    from importlib import metadata
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def get_env_info():
    """Collect the environment: a `SystemEnv`."""
    from ..cuda import is_available
    from ..version import __version__
    pip_version, pip_list = get_pip_packages(run)
    cc = os.environ.get("CC", "cc")
    return SystemEnv(
        torch_version=__version__, is_debug_build=False,
        gcc_version=get_gcc_version(run), clang_version=get_clang_version(run),
        cmake_version=get_cmake_version(run), os=get_os(run), libc_version=get_libc_version(),
        python_version=f"{sys.version} ({sys.maxsize.bit_length() + 1}-bit runtime)",
        python_platform=get_python_platform(), is_cuda_available=is_available(),
        numpy_version=_version("numpy"), scipy_version=_version("scipy"),
        c_compiler=run_and_parse_first_match(run, f"{cc} --version", r"(.*)"),
        pip_version=pip_version, pip_packages=pip_list, cpu_info=get_cpu_info(run))


def get_pretty_env_info():
    """The environment as the text bug reports paste."""
    env = get_env_info()

    def show(v):
        return "Could not collect" if v is None else str(v)
    return "\n".join([
        f"PyTorch version (ember): {env.torch_version}",
        f"Is debug build: {env.is_debug_build}", "",
        f"OS: {show(env.os)}", f"GCC version: {show(env.gcc_version)}",
        f"Clang version: {show(env.clang_version)}", f"CMake version: {show(env.cmake_version)}",
        f"C compiler (eager kernels, ember.compile): {show(env.c_compiler)}",
        f"Libc version: {env.libc_version}", "",
        f"Python version: {env.python_version}", f"Python platform: {env.python_platform}",
        f"Is CUDA available: {env.is_cuda_available}",
        f"NumPy version: {show(env.numpy_version)}", f"SciPy version: {show(env.scipy_version)}",
        "", "CPU:", show(env.cpu_info), "", "Versions of relevant libraries:",
        f"[pip] {show(env.pip_version)}", env.pip_packages])


def main():
    print("Collecting environment information...")
    print(get_pretty_env_info())


if __name__ == "__main__":
    main()
