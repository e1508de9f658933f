"""The measuring harness: latency and settle benchmarks (`make bench`), throughput of
workers and Ray, and the fault soak (`make soak`) with its fault injector, process
footprint and verdict. It drives `clinigym.run`; nothing in `run` depends on it."""
