"""Helpers shared by test modules.

Test modules import helpers from here (``tests.support.*``) and never from one another or from a
``conftest.py``: a test module is something pytest collects, not a library. Fixtures stay in
``conftest.py`` files; the plain functions, classes and constants they and the tests share live here.
"""
