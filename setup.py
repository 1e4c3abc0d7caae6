"""Only the optional C extension lives here; everything else is in pyproject.toml.

``connect_runtime.clients._bulk_produce`` speeds up the bulk copy at small records
(connect_runtime/clients/bulk_produce.py says why). It is optional: without a C compiler the install
goes on and the Python loop produces instead. It is built on CPython with the GIL only: it uses CPython's
object layout and method descriptors, and relies on the GIL to read lists (PyPy or a free-threaded build
would compile it into something that crashes, or not at all), so elsewhere the Python loop produces.
"""

import platform
import sysconfig

from setuptools import Extension, setup

span_producer = Extension(
    "connect_runtime.clients._bulk_produce",
    sources=["connect_runtime/clients/_bulk_produce.c"],
    extra_compile_args=["-O2", "-Wall", "-Wno-unused-parameter"],
    optional=True,
)

setup(
    ext_modules=[span_producer]
    if platform.python_implementation() == "CPython" and not sysconfig.get_config_var("Py_GIL_DISABLED")
    else []
)
