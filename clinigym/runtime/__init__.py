"""Running programs: the X display (Xvfb, input, screenshots), Chromium and DevTools,
bounded waiting, work folders and port blocks (`slots`), pinned npm packages, DICOM
fixtures, Docker images, the live view, and the backends (local, docker)."""
