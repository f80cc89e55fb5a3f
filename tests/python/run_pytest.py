"""ctest's entry to the Python API's tests (tests/python/test_api.py): pytest over the build
tree's libkopt (argv[1]); exit 77 (skipped) when pytest is not installed."""
import os
import sys

try:
    import pytest
except ImportError:
    print("skipped: no pytest (python3 -m pip install pytest)")
    sys.exit(77)
os.environ["KOPT_LIB"] = sys.argv[1]
sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", os.path.dirname(os.path.abspath(__file__))]))
