"""The side-by-side benchmark harness behind bench/compare."""
