"""The named passes of the inductor pipeline, in the order `compile_fx` runs them."""
