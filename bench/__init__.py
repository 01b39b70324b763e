"""Benchmarks of `kimi acp` and `kimi --wire` (not tests): `python -m bench` or `bench/run`.

See docs/performance.md for what is measured, how, and the latest results.
"""
