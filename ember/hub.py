"""ember.hub (``torch.hub``): models from ``hubconf.py`` entrypoints and cached weights.

A repository (or any directory) with a ``hubconf.py`` publishes entrypoints: the
public callables of that file, with an optional ``dependencies`` list of modules
that must be importable.  ``load(dir, name, source="local")`` calls one.

ember.hub never opens a network connection.  GitHub repositories are used from the
hub cache (``get_dir()``, laid out as torch's: ``<owner>_<name>_<ref>``) when they
are already there, and weights from ``<hub dir>/checkpoints``; anything that would
have to be downloaded raises an error saying where to put the file instead.
``file://`` URLs are read from the local file system.
"""
import contextlib
import hashlib
import importlib.util
import os
import re
import shutil
import sys
import tempfile
import warnings
from urllib.parse import unquote, urlparse

__all__ = ["download_url_to_file", "get_dir", "help", "list", "load",
           "load_state_dict_from_url", "set_dir"]

ENV_TORCH_HOME = "TORCH_HOME"
ENV_XDG_CACHE_HOME = "XDG_CACHE_HOME"
DEFAULT_CACHE_DIR = "~/.cache"
VAR_DEPENDENCY = "dependencies"
MODULE_HUBCONF = "hubconf.py"
HASH_REGEX = re.compile(r"-([a-f0-9]*)\.")
READ_DATA_CHUNK = 128 * 1024
_TRUSTED_REPO_OWNERS = ("facebookresearch", "facebookincubator", "pytorch", "fairinternal")

_hub_dir = None


class HubNetworkError(RuntimeError):
    """Raised when ember.hub would need the network to go on."""


def _get_torch_home():
    return os.path.expanduser(os.getenv(
        ENV_TORCH_HOME, os.path.join(os.getenv(ENV_XDG_CACHE_HOME, DEFAULT_CACHE_DIR), "torch")))


def get_dir():
    """Get the Torch Hub cache directory used for storing downloaded models & weights.

    If :func:`set_dir` is not called, default path is ``$TORCH_HOME/hub`` where
    environment variable ``$TORCH_HOME`` defaults to ``$XDG_CACHE_HOME/torch``, and
    ``$XDG_CACHE_HOME`` to ``~/.cache``: the same directory torch uses, so models torch
    downloaded are found by ember.
    """
    if os.getenv("TORCH_HUB"):
        warnings.warn("TORCH_HUB is deprecated, please use env TORCH_HOME instead",
                      stacklevel=2)
    if _hub_dir is not None:
        return _hub_dir
    return os.path.join(_get_torch_home(), "hub")


def set_dir(d):
    """Optionally set the Torch Hub directory used to save downloaded models & weights.

    Args:
        d (str): path to a local folder to save downloaded models & weights.
    """
    global _hub_dir
    _hub_dir = os.path.expanduser(os.fspath(d))


# ---- hubconf ----------------------------------------------------------------------------

@contextlib.contextmanager
def _add_to_sys_path(path):
    sys.path.insert(0, path)
    try:
        yield
    finally:
        sys.path.remove(path)


def _import_hubconf(repo_dir):
    path = os.path.join(repo_dir, MODULE_HUBCONF)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"no {MODULE_HUBCONF} in {repo_dir!r}: a hub repository "
                                f"publishes its entrypoints in a {MODULE_HUBCONF} at its root")
    with _add_to_sys_path(repo_dir):
        spec = importlib.util.spec_from_file_location("hubconf", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    return module


def _check_dependencies(m):
    deps = getattr(m, VAR_DEPENDENCY, None)
    if deps is not None:
        missing = [pkg for pkg in deps if importlib.util.find_spec(pkg) is None]
        if missing:
            raise RuntimeError(f"Missing dependencies: {', '.join(missing)}")


def _load_entry_from_hubconf(m, model):
    if not isinstance(model, str):
        raise ValueError("Invalid input: model should be a string of function name")
    _check_dependencies(m)
    func = getattr(m, model, None) if model in dir(m) else None
    if func is None or not callable(func):
        raise RuntimeError(f"Cannot find callable {model} in hubconf")
    return func


def _entrypoints(m):
    return [f for f in dir(m) if callable(getattr(m, f)) and not f.startswith("_")]


# ---- GitHub repositories from the cache -------------------------------------------------

def _parse_repo_info(github):
    if ":" in github:
        repo_info, ref = github.split(":", 1)
    else:
        repo_info, ref = github, None
    try:
        owner, name = repo_info.split("/")
    except ValueError:
        raise ValueError(f"Invalid GitHub repository {github!r}: expected "
                         f"'repo_owner/repo_name[:ref]' (or pass source='local' for a "
                         f"directory)") from None
    return owner, name, ref


def _check_repo_is_trusted(owner, name, hub_dir, trust_repo, calling_fn):
    if trust_repo is None:
        warnings.warn("You are about to download and run code from an untrusted repository. "
                      "In a future release, this won't be allowed. To add the repository to "
                      "your trusted list, change the command to {calling_fn}(..., "
                      "trust_repo=False) and a command prompt will appear asking for an "
                      "explicit confirmation of trust, or {calling_fn}(..., trust_repo=True), "
                      "which will assume that the prompt is to be answered with 'yes'. You "
                      "can also use {calling_fn}(..., trust_repo='check') which will only "
                      "prompt for confirmation if the repo is not already trusted. This will "
                      "eventually be the default behaviour".format(calling_fn=calling_fn),
                      stacklevel=4)
        return
    listing = os.path.join(hub_dir, "trusted_list")
    trusted = set()
    if os.path.exists(listing):
        with open(listing) as f:
            trusted = {line.strip() for line in f}
    key = f"{owner}_{name}"
    is_trusted = key in trusted or owner in _TRUSTED_REPO_OWNERS
    if trust_repo is True or (trust_repo in (False, "check") and not is_trusted):
        if trust_repo is not True:
            answer = input(f"The repository {owner}/{name} does not belong to the list of "
                           f"trusted repositories and as such cannot be downloaded. Do you "
                           f"trust this repository and wish to add it to the trusted list "
                           f"of repositories (y/N)?")
            if answer.lower() not in ("y", "yes"):
                raise Exception("Untrusted repository.")
        if not is_trusted:
            os.makedirs(hub_dir, exist_ok=True)
            with open(listing, "a") as f:
                f.write(key + "\n")


def _get_cache_or_reload(github, force_reload, trust_repo, calling_fn, verbose=True,
                         skip_validation=False):
    hub_dir = get_dir()
    owner, name, ref = _parse_repo_info(github)
    refs = [ref] if ref is not None else ["main", "master"]
    candidates = [os.path.join(hub_dir, "_".join([owner, name, r.replace("/", "_")]))
                  for r in refs]
    _check_repo_is_trusted(owner, name, hub_dir, trust_repo, calling_fn)
    cached = [d for d in candidates if os.path.isdir(d)]
    if cached and not force_reload:
        if verbose:
            sys.stderr.write(f"Using cache found in {cached[0]}\n")
        return cached[0]
    why = ("force_reload=True asks for a fresh download" if cached else
           f"it is not in the hub cache ({' or '.join(candidates)})")
    raise HubNetworkError(
        f"ember.hub does not download, and {github!r} would need it: {why}. Clone the "
        f"repository and load it with source='local' (hub.load('/path/to/{name}', model, "
        f"source='local')), or unpack it at {candidates[0]}.")


def _source_of(github):
    # list/help take no source argument (as torch's): an existing directory is local
    return "local" if os.path.isdir(os.path.expanduser(github)) else "github"


def _repo_dir(repo_or_dir, source, force_reload, trust_repo, calling_fn, verbose,
              skip_validation):
    source = source.lower()
    if source not in ("github", "local"):
        raise ValueError(f'Unknown source: "{source}". Allowed values: "github" | "local".')
    if source == "local":
        return repo_or_dir
    return _get_cache_or_reload(repo_or_dir, force_reload, trust_repo, calling_fn,
                                verbose=verbose, skip_validation=skip_validation)


def list(github, force_reload=False, skip_validation=False, trust_repo="check", verbose=True):
    """List all callable entrypoints available in the repo specified by ``github``.

    Args:
        github (str): a string with format "repo_owner/repo_name[:ref]" (used from the
            hub cache), or the path of a local directory holding a ``hubconf.py``.
        force_reload (bool, optional): whether to discard the existing cache (ember never
            downloads, so this raises for GitHub repositories).
        skip_validation (bool, optional): accepted for compatibility (no GitHub API calls).
        trust_repo (bool or str): ``"check"``, ``True`` or ``False`` (see :func:`load`).
        verbose (bool, optional): If ``False``, mute messages about hitting local caches.

    Returns:
        list: The available callables entrypoint
    """
    repo_dir = _repo_dir(github, _source_of(github), force_reload, trust_repo, "list",
                         verbose, skip_validation)
    return _entrypoints(_import_hubconf(repo_dir))


def help(github, model, force_reload=False, skip_validation=False, trust_repo="check"):
    """Show the docstring of entrypoint ``model``.

    Args:
        github (str): a string with format "repo_owner/repo_name[:ref]", or the path of
            a local directory holding a ``hubconf.py``.
        model (str): a string of entrypoint name defined in repo's ``hubconf.py``
    """
    repo_dir = _repo_dir(github, _source_of(github), force_reload, trust_repo, "help", True,
                         skip_validation)
    entry = _load_entry_from_hubconf(_import_hubconf(repo_dir), model)
    return entry.__doc__


def load(repo_or_dir, model, *args, source="github", trust_repo="check", force_reload=False,
         verbose=True, skip_validation=False, **kwargs):
    """Load a model from a github repo or a local directory.

    Args:
        repo_or_dir (str): If ``source`` is 'github', a github repo with format
            ``repo_owner/repo_name[:ref]`` (found in the hub cache: ember does not
            download). If ``source`` is 'local', a path to a local directory.
        model (str): the name of a callable (entrypoint) defined in the repo/dir's
            ``hubconf.py``.
        *args (optional): the corresponding args for callable ``model``.
        source (str, optional): 'github' or 'local'. Default is 'github'.
        trust_repo (bool or str): ``"check"``, ``True`` or ``False``: whether a GitHub
            repository not yet trusted may run; ``"check"`` and ``False`` ask for
            confirmation, ``True`` adds it to ``<hub dir>/trusted_list``.
        force_reload (bool, optional): force a fresh download (which ember refuses).
        verbose (bool, optional): If ``False``, mute messages about hitting local caches.
        skip_validation (bool, optional): accepted for compatibility.
        **kwargs (optional): the corresponding kwargs for callable ``model``.

    Returns:
        The output of the ``model`` callable when called with the given ``*args`` and
        ``**kwargs``.
    """
    repo_dir = _repo_dir(repo_or_dir, source, force_reload, trust_repo, "load", verbose,
                         skip_validation)
    return _load_local(repo_dir, model, *args, **kwargs)


def _load_local(hubconf_dir, model, *args, **kwargs):
    with _add_to_sys_path(hubconf_dir):
        entry = _load_entry_from_hubconf(_import_hubconf(hubconf_dir), model)
        return entry(*args, **kwargs)


# ---- files ------------------------------------------------------------------------------

def _local_path_of(url):
    parts = urlparse(url)
    if parts.scheme == "file":
        return unquote(parts.path)
    if parts.scheme == "" and os.path.exists(url):
        return url
    return None


def download_url_to_file(url, dst, hash_prefix=None, progress=True):
    """Download object at the given URL to a local path.

    ember copies ``file://`` URLs (and local paths); any other URL raises
    `HubNetworkError` (a ``RuntimeError``), as ember.hub never uses the network.

    Args:
        url (str): URL of the object to download
        dst (str): Full path where object will be saved, e.g. ``/tmp/temporary_file``
        hash_prefix (str, optional): If not None, the SHA256 downloaded file should start
            with ``hash_prefix``.
        progress (bool, optional): accepted for compatibility.
    """
    src = _local_path_of(url)
    if src is None:
        raise HubNetworkError(f"ember.hub does not download: fetching {url!r} needs the "
                              f"network. Download it yourself and place it at {dst!r}, or "
                              f"pass a file:// URL")
    dst = os.path.expanduser(dst)
    folder = os.path.dirname(os.path.abspath(dst))
    os.makedirs(folder, exist_ok=True)
    # write beside the destination, then rename: a half-copied file never looks complete
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".hub-", suffix=".partial")
    try:
        sha = hashlib.sha256()
        with os.fdopen(fd, "wb") as out, open(src, "rb") as f:
            while True:
                chunk = f.read(READ_DATA_CHUNK)
                if not chunk:
                    break
                out.write(chunk)
                sha.update(chunk)
        if hash_prefix is not None:
            digest = sha.hexdigest()
            if digest[:len(hash_prefix)] != hash_prefix:
                raise RuntimeError(f'invalid hash value (expected "{hash_prefix}", got '
                                   f'"{digest}")')
        shutil.move(tmp, dst)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def load_state_dict_from_url(url, model_dir=None, map_location=None, progress=True,
                             check_hash=False, file_name=None, weights_only=False):
    """Loads the serialized object at the given URL, from the hub's checkpoint cache.

    The file is looked up as ``<model_dir>/<file name>`` (``model_dir`` defaults to
    ``<hub_dir>/checkpoints``, the directory torch caches into, so weights torch
    downloaded are found); it is only "downloaded" from a ``file://`` URL, and a missing
    file behind any other URL raises `HubNetworkError` naming the path to put it at.

    Args:
        url (str): URL of the object to download
        model_dir (str, optional): directory in which to save the object
        map_location (optional): a function or a dict specifying how to remap storage
            locations (see :func:`ember.load`)
        progress (bool, optional): accepted for compatibility.
        check_hash (bool, optional): If True, the filename part of the URL should follow
            the naming convention ``filename-<sha256>.ext`` where ``<sha256>`` is the first
            eight or more digits of the SHA256 hash of the contents of the file; the hash
            of a file copied from a ``file://`` URL is verified.
        file_name (str, optional): name for the downloaded file. Filename from ``url`` will
            be used if not set.
        weights_only (bool, optional): If True, only weights will be loaded and no complex
            pickled objects.
    """
    if os.getenv("TORCH_MODEL_ZOO"):
        warnings.warn("TORCH_MODEL_ZOO is deprecated, please use env TORCH_HOME instead",
                      stacklevel=2)
    if model_dir is None:
        model_dir = os.path.join(get_dir(), "checkpoints")
    filename = file_name if file_name is not None else os.path.basename(urlparse(url).path)
    cached = os.path.join(model_dir, filename)
    if not os.path.exists(cached):
        hash_prefix = None
        if check_hash:
            r = HASH_REGEX.search(filename)
            hash_prefix = r.group(1) if r else None
        if _local_path_of(url) is None:
            raise HubNetworkError(f"ember.hub does not download: {filename!r} is not in the "
                                  f"checkpoint cache and fetching {url!r} needs the network. "
                                  f"Download it yourself and place it at {cached!r}")
        os.makedirs(model_dir, exist_ok=True)
        sys.stderr.write(f'Downloading: "{url}" to {cached}\n')
        download_url_to_file(url, cached, hash_prefix, progress=progress)
    from .serialization import load as _load
    return _load(cached, map_location=map_location, weights_only=weights_only)

