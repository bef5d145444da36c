"""``torch.torch_version``: `TorchVersion`, the type of ``__version__``.

A str that compares as a version (PEP 440 order) against strings, tuples of numbers
and version objects: ``__version__ >= "2.9"`` is true for 2.13 although the plain
strings compare the other way, and ``__version__ >= (2, 1)`` works.  A string that is
not a version compares as a plain string.
"""
import re

__all__ = ["TorchVersion"]

_PATTERN = re.compile(
    r"v?(?:(?P<epoch>\d+)!)?(?P<release>\d+(?:\.\d+)*)"
    r"(?:[-_.]?(?P<pre_l>a|b|c|rc|alpha|beta|pre|preview)[-_.]?(?P<pre_n>\d+)?)?"
    r"(?:-(?P<post_n1>\d+)|[-_.]?(?P<post_l>post|rev|r)[-_.]?(?P<post_n2>\d+)?)?"
    r"(?:[-_.]?(?P<dev_l>dev)[-_.]?(?P<dev_n>\d+)?)?"
    r"(?:\+(?P<local>[a-z0-9]+(?:[-_.][a-z0-9]+)*))?", re.IGNORECASE)
_PRE_RANK = {"a": 0, "alpha": 0, "b": 1, "beta": 1, "c": 2, "rc": 2, "pre": 2, "preview": 2}


def _key(text):
    """The sort key of a PEP 440 version string; ValueError if it is not one."""
    m = _PATTERN.fullmatch(text.strip())
    if m is None:
        raise ValueError(f"Invalid version: {text!r}")
    release = [int(p) for p in m["release"].split(".")]
    while len(release) > 1 and release[-1] == 0:
        release.pop()
    post = m["post_n1"] or m["post_n2"]
    has_post = post is not None or m["post_l"] is not None
    dev = m["dev_n"]
    has_dev = m["dev_l"] is not None
    if m["pre_l"]:
        pre = (1, _PRE_RANK[m["pre_l"].lower()], int(m["pre_n"] or 0))
    elif has_dev and not has_post:
        pre = (0, 0, 0)     # 1.0.dev1 sorts before 1.0a1
    else:
        pre = (2, 0, 0)
    post_key = (1, int(post or 0)) if has_post else (0, 0)
    dev_key = (0, int(dev or 0)) if has_dev else (1, 0)
    local = ((1, tuple((1, int(s), "") if s.isdigit() else (0, 0, s.lower())
                       for s in re.split(r"[-_.]", m["local"]))) if m["local"] else (0, ()))
    return (int(m["epoch"] or 0), tuple(release), pre, post_key, dev_key, local)


def _other_key(other):
    if isinstance(other, str):
        return _key(other)
    if isinstance(other, (tuple, list)):
        return _key(".".join(str(x) for x in other))
    text = str(other)      # a packaging Version (or anything printing as a version)
    if type(other).__name__ == "Version":
        return _key(text)
    raise ValueError(f"Invalid version: {other!r}")


class TorchVersion(str):
    """``__version__``: a str comparing as a version against str, tuple and Version."""

    __slots__ = ()

    def _compare(self, other, op, fallback):
        try:
            return op(_key(self), _other_key(other))
        except ValueError:
            return fallback(self, other)

    def __eq__(self, other):
        return self._compare(other, lambda a, b: a == b, str.__eq__)

    def __lt__(self, other):
        return self._compare(other, lambda a, b: a < b, str.__lt__)

    def __le__(self, other):
        return self._compare(other, lambda a, b: a <= b, str.__le__)

    def __gt__(self, other):
        return self._compare(other, lambda a, b: a > b, str.__gt__)

    def __ge__(self, other):
        return self._compare(other, lambda a, b: a >= b, str.__ge__)

    # != stays str's, as torch's (TorchVersion("2.13.0") != "2.13" is True)
    __hash__ = str.__hash__
