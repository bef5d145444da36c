"""ember.hub against torch.hub: local hubconf entrypoints, dependencies, the cache directory,
cached checkpoints (also written by torch), file:// downloads with hash checks, and clear
errors where the network would be needed."""
import hashlib
import inspect
import os
import textwrap

import numpy as np
import pytest
import torch

import ember
import ember.hub as hub

HUBCONF = '''
dependencies = ["numpy"]


def tiny(n=3, *, bias=True):
    """A tiny linear model."""
    from helper import make
    return make(n, bias)


def _private():
    return None


not_callable = 42
'''

HELPER = '''
import ember


def make(n, bias):
    ember.manual_seed(0)
    return ember.nn.Linear(n, 2, bias=bias)
'''


@pytest.fixture
def repo(tmp_path):
    d = tmp_path / "repo"
    d.mkdir()
    (d / "hubconf.py").write_text(HUBCONF)
    (d / "helper.py").write_text(HELPER)  # hubconf imports its own repo's modules
    return str(d)


@pytest.fixture
def hub_dir(tmp_path):
    old = hub._hub_dir
    hub.set_dir(str(tmp_path / "hubcache"))
    yield str(tmp_path / "hubcache")
    hub._hub_dir = old


def test_signatures_match_torch():
    for name in torch.hub.__all__:
        se, st = inspect.signature(getattr(hub, name)), inspect.signature(getattr(torch.hub, name))
        assert [(p.name, p.kind, p.default) for p in se.parameters.values()] == \
            [(p.name, p.kind, p.default) for p in st.parameters.values()], name
    assert sorted(hub.__all__) == sorted(torch.hub.__all__)


def test_load_local(repo):
    m = hub.load(repo, "tiny", 4, source="local", bias=False)
    assert isinstance(m, ember.nn.Linear) and m.in_features == 4 and m.bias is None
    # same entrypoint through torch.hub gives the same call (torch's loader, ember's model)
    m2 = torch.hub.load(repo, "tiny", 4, source="local", bias=False)
    np.testing.assert_array_equal(m.weight.detach().numpy(), m2.weight.detach().numpy())
    assert "helper" not in [os.path.basename(p) for p in __import__("sys").path]


def test_list_and_help_local(repo):
    # torch's list/help take GitHub repos only; ember also takes a directory, and lists
    # the public callables of its hubconf as torch does for a cached repo
    assert hub.list(repo) == ["tiny"]
    assert hub.help(repo, "tiny") == "A tiny linear model."
    with pytest.raises(ValueError):
        torch.hub.list(repo)


def test_entrypoint_errors_match_torch(repo, tmp_path):
    for bad in ("missing", "not_callable"):
        with pytest.raises(RuntimeError) as te:
            torch.hub.load(repo, bad, source="local")
        with pytest.raises(RuntimeError) as ee:
            hub.load(repo, bad, source="local")
        assert str(ee.value) == str(te.value) == f"Cannot find callable {bad} in hubconf"
    with pytest.raises(ValueError, match="model should be a string"):
        hub.load(repo, 3, source="local")
    with pytest.raises(ValueError) as te:
        torch.hub.load(repo, "tiny", source="svn")
    with pytest.raises(ValueError) as ee:
        hub.load(repo, "tiny", source="svn")
    assert str(ee.value) == str(te.value)
    d = tmp_path / "deps"
    d.mkdir()
    (d / "hubconf.py").write_text("dependencies = ['numpy', 'no_such_pkg_a', 'no_such_pkg_b']\n"
                                  "def m():\n    return 1\n")
    with pytest.raises(RuntimeError) as te:
        torch.hub.load(str(d), "m", source="local")
    with pytest.raises(RuntimeError) as ee:
        hub.load(str(d), "m", source="local")
    assert str(ee.value) == str(te.value) == "Missing dependencies: no_such_pkg_a, no_such_pkg_b"
    with pytest.raises(FileNotFoundError, match="hubconf.py"):
        hub.load(str(tmp_path), "m", source="local")


def test_get_dir_follows_torch(monkeypatch, tmp_path):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "th"))
    old_e, old_t = hub._hub_dir, torch.hub._hub_dir
    hub._hub_dir = torch.hub._hub_dir = None
    try:
        assert hub.get_dir() == torch.hub.get_dir() == str(tmp_path / "th" / "hub")
        monkeypatch.delenv("TORCH_HOME")
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
        assert hub.get_dir() == torch.hub.get_dir() == str(tmp_path / "xdg" / "torch" / "hub")
        hub.set_dir("~/somewhere")
        torch.hub.set_dir("~/somewhere")
        assert hub.get_dir() == torch.hub.get_dir() == os.path.expanduser("~/somewhere")
    finally:
        hub._hub_dir, torch.hub._hub_dir = old_e, old_t


def test_github_source_uses_cache_or_says_no_network(repo, hub_dir, capsys):
    with pytest.raises(hub.HubNetworkError, match="source='local'"):
        hub.load("someone/tinyrepo", "tiny", trust_repo=True)
    # a repository already in the cache (torch's layout: owner_name_ref) loads offline
    import shutil
    shutil.copytree(repo, os.path.join(hub_dir, "someone_tinyrepo_main"))
    m = hub.load("someone/tinyrepo", "tiny", 2, trust_repo=True)
    assert m.in_features == 2
    assert "Using cache found in" in capsys.readouterr().err
    with open(os.path.join(hub_dir, "trusted_list")) as f:
        assert f.read().split() == ["someone_tinyrepo"]
    # now trusted: "check" needs no prompt
    assert hub.list("someone/tinyrepo", verbose=False) == ["tiny"]
    with pytest.raises(hub.HubNetworkError, match="force_reload"):
        hub.load("someone/tinyrepo", "tiny", force_reload=True)
    with pytest.raises(hub.HubNetworkError):
        hub.load("someone/tinyrepo:v2", "tiny")  # another ref is not cached
    with pytest.raises(ValueError, match="repo_owner/repo_name"):
        hub.load("not-a-repo-spec", "tiny")


def test_untrusted_repo_prompts(repo, hub_dir, monkeypatch):
    import shutil
    shutil.copytree(repo, os.path.join(hub_dir, "stranger_r_main"))
    monkeypatch.setattr("builtins.input", lambda *_: "no")
    with pytest.raises(Exception, match="Untrusted repository"):
        hub.load("stranger/r", "tiny")
    monkeypatch.setattr("builtins.input", lambda *_: "yes")
    assert hub.load("stranger/r", "tiny").in_features == 3


def test_load_state_dict_from_url_reads_cache(hub_dir, tmp_path):
    sd = {"w": torch.arange(6.0).reshape(2, 3), "b": torch.ones(2)}
    ckpt = os.path.join(hub_dir, "checkpoints")
    os.makedirs(ckpt)
    torch.save(sd, os.path.join(ckpt, "net-1234abcd.pth"))  # as torch's download left it
    url = "https://download.example.org/models/net-1234abcd.pth"
    got = hub.load_state_dict_from_url(url, weights_only=True)
    assert set(got) == {"w", "b"}
    np.testing.assert_array_equal(got["w"].numpy(), sd["w"].numpy())
    got2 = hub.load_state_dict_from_url("https://x/y/other.pth", file_name="net-1234abcd.pth",
                                        weights_only=True)
    np.testing.assert_array_equal(got2["b"].numpy(), sd["b"].numpy())
    with pytest.raises(hub.HubNetworkError) as e:
        hub.load_state_dict_from_url("https://download.example.org/models/absent.pth")
    assert os.path.join(ckpt, "absent.pth") in str(e.value)
    with pytest.raises(RuntimeError):  # HubNetworkError is a RuntimeError
        hub.load_state_dict_from_url("https://a/absent.pth", model_dir=str(tmp_path / "md"))


def test_file_urls_download_with_hash_check(hub_dir, tmp_path):
    src = tmp_path / "src.pt"
    ember.save({"x": ember.tensor([1.0, 2.0])}, str(src))
    digest = hashlib.sha256(src.read_bytes()).hexdigest()
    dst = tmp_path / "out" / "copy.pt"
    hub.download_url_to_file(src.as_uri(), str(dst), hash_prefix=digest[:10])
    assert dst.read_bytes() == src.read_bytes()
    with pytest.raises(RuntimeError, match="invalid hash value"):
        hub.download_url_to_file(src.as_uri(), str(tmp_path / "bad.pt"), hash_prefix="0" * 8
                                 if not digest.startswith("0" * 8) else "f" * 8)
    assert not (tmp_path / "bad.pt").exists()
    assert [f for f in os.listdir(tmp_path) if f.endswith(".partial")] == []
    with pytest.raises(hub.HubNetworkError, match="needs the network"):
        hub.download_url_to_file("https://example.org/f.bin", str(tmp_path / "f.bin"))
    # check_hash: the name's hash part must match the copied contents
    named = tmp_path / f"weights-{digest[:8]}.pt"
    named.write_bytes(src.read_bytes())
    got = hub.load_state_dict_from_url(named.as_uri(), check_hash=True, weights_only=True)
    assert got["x"].tolist() == [1.0, 2.0]
    assert os.path.exists(os.path.join(hub_dir, "checkpoints", named.name))
    wrong = tmp_path / "weights-deadbeef.pt"
    wrong.write_bytes(src.read_bytes())
    if not digest.startswith("deadbeef"):
        with pytest.raises(RuntimeError, match="invalid hash value"):
            hub.load_state_dict_from_url(wrong.as_uri(), check_hash=True)


def test_hub_module_exposed():
    assert ember.hub is hub
    src = textwrap.dedent(hub.__doc__)
    assert "never opens a network connection" in src
