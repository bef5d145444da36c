"""``ember.utils``: data loading, safetensors exchange, benchmarking helpers."""
