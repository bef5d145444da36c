"""Nested state dicts as flat dotted keys, and back.

``{"model": {"fc.weight": w}, "epoch": 3}`` flattens to ``{"model.fc.weight": w,
"epoch": 3}``; the mapping keeps each key's original path (as a tuple of the dict keys), so
dots inside keys and non-string keys unflatten exactly.  Lists and other values are leaves.
"""


def flatten_state_dict(state_dict):
    flat, mapping = {}, {}

    def walk(obj, path):
        if isinstance(obj, dict) and obj:
            for k, v in obj.items():
                walk(v, path + (k,))
            return
        fqn = ".".join(str(p) for p in path)
        if fqn in flat:
            raise ValueError(f"distributed checkpoint: key {fqn!r} appears twice after "
                             f"flattening nested dicts ({mapping[fqn]} and {path})")
        flat[fqn] = obj
        mapping[fqn] = path

    for k, v in state_dict.items():
        walk(v, (k,))
    return flat, mapping


def set_element(root, path, value):
    cur = root
    for k in path[:-1]:
        nxt = cur.get(k) if isinstance(cur, dict) else None
        if not isinstance(nxt, dict):
            nxt = {}
            cur[k] = nxt
        cur = nxt
    cur[path[-1]] = value


def unflatten_state_dict(flat, mapping):
    out = {}
    for fqn, value in flat.items():
        set_element(out, tuple(mapping.get(fqn, (fqn,))), value)
    return out
