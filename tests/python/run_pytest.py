"""ctest's entry to the Python API's tests (tests/python/test_api.py): pytest over the build
tree's libkopt (argv[1]); exit 77 (skipped) when pytest is not installed. The ten longest
tests' times are printed last (--durations), so a suite's log says where the time went, and
why each skipped test skipped (-rs)."""
import os
import sys

try:
    import pytest
except ImportError:
    print("skipped: no pytest (python3 -m pip install pytest)")
    sys.exit(77)
os.environ["KOPT_LIB"] = sys.argv[1]
sys.exit(pytest.main(["-q", "-rs", "-p", "no:cacheprovider", "--durations=10",
                      os.path.dirname(os.path.abspath(__file__))]))
