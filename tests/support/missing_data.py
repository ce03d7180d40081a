"""What a Python test does when the data or oracle it needs is missing.

On a developer's machine it skips, saying what is missing ("SKIPPED: ...").
Under ASTRAI_REQUIRE_TEST_DATA=1, which scripts/build-and-test.sh sets when
CI=true (CI installs every oracle and has ../shared beside the checkout), a
skip would be a hole in what CI proves, so the test fails instead. The C++
tests do the same through ASTRAI_MISSING (tests/support/shared_data.h).
"""
import os


def required():
    return os.environ.get("ASTRAI_REQUIRE_TEST_DATA") == "1"


def missing(message):
    """Prints why; True when the caller must fail rather than skip."""
    if required():
        print(f"FAILED: missing, and ASTRAI_REQUIRE_TEST_DATA=1 forbids skipping: {message}", flush=True)
        return True
    print(f"SKIPPED: {message}", flush=True)
    return False


def debian_import(name):
    """The module `name` ("msgpack", "prometheus_client.parser"), or None.
    Debian's python3-* packages install for Debian's python3; a python3 of
    its own (pyenv, the same 3.11 ABI) finds them in Debian's dist-packages."""
    import importlib
    import sys
    try:
        return importlib.import_module(name)
    except ImportError:
        if "/usr/lib/python3/dist-packages" not in sys.path:
            sys.path.append("/usr/lib/python3/dist-packages")
        try:
            return importlib.import_module(name)
        except ImportError:
            return None
