.PHONY: setup demo test test-slow bench
PY ?= python3

setup:
	$(PY) -m pip install torch==2.13.0
	$(PY) -m pip install -e ".[dev]"

demo:
	personatree demo

test:
	$(PY) -m pytest -m "not slow"

test-slow:
	$(PY) -m pytest -m slow

ci:
	bash .ci/run
