"""The test suite: a package, so that `tests.*` helper imports find these files before any installed
top-level `tests` package (draccus, a dependency of lerobot, ships one)."""
