"""stack_module_state: stack the parameters and buffers of identical modules for vmap."""
__all__ = ["stack_module_state"]


def stack_module_state(models):
    """Returns ``(params, buffers)`` dicts whose entries stack the corresponding tensors of
    ``models`` along a new leading dimension (ensembling with vmap + functional_call)."""
    from ..ops.shape import stack
    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or all(not m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same training/"
                           "eval mode.")
    kind = type(models[0])
    if any(type(m) is not kind for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")
    params = {k: stack([dict(m.named_parameters())[k] for m in models]).detach()
              .requires_grad_(True) for k, _ in models[0].named_parameters()}
    buffers = {k: stack([dict(m.named_buffers())[k] for m in models])
               for k, _ in models[0].named_buffers()}
    return params, buffers
