"""Maintainer tools: course builds and the notebook executor.

A package so that tests and other tools import them by name
(``from tools import coursebuild``); each module also runs as a script,
``python -m tools.coursebuild student`` or ``python tools/coursebuild.py student``.
"""
