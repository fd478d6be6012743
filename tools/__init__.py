"""Maintainer tools: the torch install, the notebook executor, course builds.

A package so that tests and other tools import them by name
(``from tools import coursebuild``); each module also runs as a module,
``python -m tools.coursebuild student`` (README, "Layout", lists them all).
"""
