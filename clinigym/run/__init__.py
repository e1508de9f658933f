"""Running agents over scenarios: the runner, the worker pool, Ray, resume and cleanup; the
measuring harness is `clinigym.bench`."""
