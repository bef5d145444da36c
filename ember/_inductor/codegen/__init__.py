"""Code generators: C kernels, their NumPy twins, and the wrapper that calls them."""
